package report

// LineChartSVG is the exported face of the report's line chart, for other pages of the toolkit
// (klt plan's): the same drawing as report.html's charts, nothing copied.

// LineChartSVG returns an <svg> element of width w and height h with one polyline per series
// (each Point an x and a y), axes from 0 with ticks at round numbers, the axis labels and a
// legend, series in name order with the report's palette; logY makes the y axis logarithmic
// from 1. Every string is escaped; attrs are extra attributes of the element, already escaped
// (class="chart" id="partitions"). Each polyline has class "series" and data-series set to its
// name, so that a test finds the curves; a chart without series says "no samples".
func LineChartSVG(title, xLabel, yLabel string, series map[string][]Point, w, h float64, logY bool, attrs string) string {
	return lineChart(title, xLabel, yLabel, series, nil, w, h, logY).element(attrs)
}
