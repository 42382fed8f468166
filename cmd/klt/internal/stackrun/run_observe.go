package stackrun

import (
	"context"
	"fmt"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/funcrun"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/esm/samspec"
	"github.com/kafkalambda/toolkit/internal/faultproxy"
)

// How klt local drives the observation layer (observe.go): what it watches, where the
// functions' endpoints point, the accounting spec of each pipeline, and the faults that the
// proxies and the sink inject.

// startObservation starts the observation of the stack: topics are every topic of the stack,
// read those the mappings read (klt produces to them; the others are the functions' outputs).
func (s *stack) startObservation(ctx context.Context, topics, read []string) error {
	r := s.ls.Resolver
	tables := map[string]string{}
	for id, t := range r.Tables {
		tables[t.Name] = id
	}
	readQueue := map[string]bool{}
	for _, m := range s.specs {
		if m.Kind == samspec.SqsMapping {
			readQueue[m.Queue] = true
		}
	}
	var list []string
	for _, q := range keysOf(r.QueueURLs) {
		if !readQueue[q] {
			list = append(list, q)
		}
	}
	outputs := map[string]string{} // topic -> the function that produces to it
	for _, t := range topics {
		if !contains(read, t) {
			outputs[t] = ""
		}
	}
	for fn, vars := range s.vars {
		for _, t := range funcrun.TopicsOf(vars) {
			if _, ok := outputs[t]; ok {
				outputs[t] = fn
			}
		}
	}
	o, err := startObservation(ctx, observationConfig{
		Ledger:           ledger.New(),
		DynamoDBEndpoint: s.ls.Endpoints["AWS_ENDPOINT_URL_DYNAMODB"],
		SQSEndpoint:      s.ls.Endpoints["AWS_ENDPOINT_URL_SQS"],
		SQS:              s.sqsClient,
		Kafka:            s.kafka,
		Brokers:          s.brokers,
		Tables:           tables,
		Queues:           r.QueueURLs,
		List:             list,
		OutputTopics:     outputs,
		HTTPSink:         s.c.HTTPSink,
		HTTPWork:         s.c.Work,
	})
	if err != nil {
		return err
	}
	s.obs = o
	return nil
}

// functionEndpoints returns function fn's local endpoints: DynamoDB and SQS through its own
// listener of each fault proxy, Kafka direct (its faults are kfake's).
func (s *stack) functionEndpoints(fn string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range s.ls.Endpoints {
		out[k] = v
	}
	for k, p := range map[string]*faultproxy.Proxy{"AWS_ENDPOINT_URL_DYNAMODB": s.obs.DynamoDB, "AWS_ENDPOINT_URL_SQS": s.obs.SQS} {
		if p == nil {
			continue
		}
		u, err := p.URL(fn)
		if err != nil {
			return nil, err
		}
		out[k] = u
	}
	return out, nil
}

// accountSpec is what the accounting needs of pipeline p: its mappings, their destinations,
// and where its last function's side effects are observed: the HTTP sink when its parameter
// reaches the function, the topics and tables of its environment (the queues it sends to
// are found in the ledger).
func (s *stack) accountSpec(p *pipeline) ledger.Spec {
	spec := ledger.Spec{Name: p.name, Topic: p.topic, Functions: p.functions, Destinations: map[string]ledger.Resource{}}
	r := s.ls.Resolver
	for _, m := range p.specs {
		spec.Mappings = append(spec.Mappings, m.Id)
		switch {
		case m.Kind == samspec.SqsMapping:
			if d := s.deadLetterQueueOf(m.Queue); d != "" {
				spec.Destinations[m.Id] = ledger.Resource{Kind: ledger.EffectQueue, Name: d}
			}
		case m.OnFailureTopic() != "":
			spec.Destinations[m.Id] = ledger.Resource{Kind: ledger.EffectTopic, Name: m.OnFailureTopic()}
		default:
			if q, ok := samspec.QueueByARN(r, m.OnFailure); ok {
				spec.Destinations[m.Id] = ledger.Resource{Kind: ledger.EffectQueue, Name: q}
			}
		}
	}
	fn := p.applier()
	vars := s.vars[fn]
	if s.c.HTTPSink != "" {
		for _, v := range vars {
			if v == s.obs.HTTP.URL(fn) {
				spec.Resources = append(spec.Resources, ledger.Resource{Kind: ledger.EffectHTTP, Name: s.c.HTTPSink})
				break
			}
		}
	}
	for id, t := range r.Tables {
		for _, v := range vars {
			if v == t.Name {
				spec.Resources = append(spec.Resources, ledger.Resource{Kind: ledger.EffectTable, Name: id})
				break
			}
		}
	}
	read := map[string]bool{}
	for _, m := range s.specs {
		for _, t := range m.Topics {
			read[t] = true
		}
	}
	for _, k := range keysOf(vars) {
		for _, t := range topicsOfVar(k, vars[k]) {
			if !read[t] {
				spec.Resources = append(spec.Resources, ledger.Resource{Kind: ledger.EffectTopic, Name: t})
			}
		}
	}
	return spec
}

// topicsOfVar returns the topics an environment variable names (those whose name says TOPIC).
func topicsOfVar(name, value string) []string {
	return funcrun.TopicsOf(map[string]string{name: value})
}

// lastFate is when the last record of a got its fate: its last effect or step.
func (s *stack) lastFate(a ledger.PipelineAccount) time.Time {
	var last time.Time
	for _, ra := range a.Records {
		_, steps, effects := s.obs.ledger.History(ra.ID)
		for _, st := range steps {
			if st.At.After(last) {
				last = st.At
			}
		}
		for _, e := range effects {
			if e.At.After(last) {
				last = e.At
			}
		}
	}
	return last
}

// failFirstRequest makes the HTTP sink answer 503 to each function's first request for id.
func (s *stack) failFirstRequest(id ledger.RecordID) {
	if s.obs.HTTP != nil {
		s.obs.HTTP.failFirst(id)
	}
}

// failDynamoDB fails the functions' next n calls to DynamoDB (of op, "" for any).
func (s *stack) failDynamoDB(n int, op string) {
	if s.obs.DynamoDB != nil {
		s.obs.DynamoDB.FailNext(n, op, faultproxy.InternalServerError)
	}
}

// failSQS fails the functions' next n calls to SQS (of op, "" for any).
func (s *stack) failSQS(n int, op string) {
	if s.obs.SQS != nil {
		s.obs.SQS.FailNext(n, op, faultproxy.InternalServerError)
	}
}

// failKafka fails the functions' next n produce requests.
func (s *stack) failKafka(n int) {
	if s.obs.Kafka != nil {
		s.obs.Kafka.FailNext(n, "")
	}
}

// faultsAnswered is how many calls the server fault f failed so far (over the run).
func (s *stack) faultsAnswered(f FaultSpec) int {
	switch {
	case f.Kind == faultDynamoDB && s.obs.DynamoDB != nil:
		return s.obs.DynamoDB.Faults(f.Op)
	case f.Kind == faultSQS && s.obs.SQS != nil:
		return s.obs.SQS.Faults(f.Op)
	case f.Kind == faultKafka && s.obs.Kafka != nil:
		_, n := s.obs.Kafka.Calls()
		return n
	}
	return 0
}

// failureQueueCount is how many records function fn sent to its failure queues, as the SQS
// proxy saw them go (the lister reads them there too).
func (s *stack) failureQueueCount(fn string) report.Count {
	failed, _ := s.obs.ledger.CountsByFunction()
	return report.Observed(int64(failed[fn]))
}

// addMetrics adds the MetricsConfig figures of a mapping's phase to its totals, as CloudWatch
// would show them over the run, each with report.CloudWatchStatistic's statistic: the counts
// summed over the phases, the offset lags as at the end of the last phase.
func (s *stack) addMetrics(t *report.Mapping, r *running) {
	var values map[string]int64
	if r.kafka != nil {
		values, t.MetricGroups = r.kafka.Metrics(), r.kafka.MetricGroups()
	} else if r.sqs != nil {
		values, t.MetricGroups = r.sqs.Metrics(), r.sqs.MetricGroups()
	}
	sum := map[string]float64{}
	for _, m := range t.Metrics {
		sum[m.Name] = m.Value
	}
	for name, v := range values {
		if name == esm.MetricMaxOffsetLag || name == esm.MetricSumOffsetLag {
			sum[name] = float64(v) // gauges: as at the end of the last phase
		} else {
			sum[name] += float64(v) // counts: summed over the phases
		}
	}
	if ms, err := report.NewMetrics(sum, nil); err == nil {
		t.Metrics = ms
	} else {
		fmt.Fprintf(s.out, "klt local: %s: %v\n", t.Name, err)
	}
}
