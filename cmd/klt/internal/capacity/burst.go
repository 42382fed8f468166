package capacity

import (
	"math"
	"time"
)

// maxCurvePoints is the most points a burst's curve has.
const maxCurvePoints = 500

// simulate is the lag a burst leaves, in steps of one second from the burst's start: records
// arrive at Input.Burst for BurstFor, then at Input.Rate; the design takes out(t) a second
// (out is given the seconds since the burst's start); the lag is what has arrived and not
// been taken, lag(t+1) = max(0, lag(t) + in(t) - out(t)). DrainSeconds counts from the
// burst's end to the first second without lag; the simulation looks no further than 7 days
// past the burst (the longest MaximumRecordAgeInSeconds), and a lag not gone by then leaves
// DrainSeconds null.
func simulate(in *Input, out func(t int) float64) *Burst {
	burstFor := int(math.Ceil(time.Duration(in.BurstFor).Seconds()))
	horizon := burstFor + int(maxRecordAge/time.Second)
	lag, peak := 0.0, 0.0
	lags := make([]float64, 0, 1024)
	lags = append(lags, 0)
	var drain *float64
	for t := 0; t < horizon; t++ {
		arrive := in.Rate
		if t < burstFor {
			arrive = in.Burst
		}
		lag = math.Max(0, lag+arrive-out(t))
		peak = math.Max(peak, lag)
		lags = append(lags, lag)
		if t+1 >= burstFor && lag == 0 {
			d := float64(t + 1 - burstFor)
			drain = &d
			break
		}
	}
	return &Burst{LagRecords: peak, DrainSeconds: drain, Curve: curve(lags)}
}

// curve samples lags (one a second from 0) to at most maxCurvePoints points, the last one
// always in.
func curve(lags []float64) []Point {
	step := max(1, (len(lags)+maxCurvePoints-2)/(maxCurvePoints-1))
	pts := make([]Point, 0, maxCurvePoints)
	for i := 0; i < len(lags); i += step {
		pts = append(pts, Point{X: float64(i), Y: lags[i]})
	}
	if last := len(lags) - 1; pts[len(pts)-1].X != float64(last) {
		pts = append(pts, Point{X: float64(last), Y: lags[last]})
	}
	return pts
}
