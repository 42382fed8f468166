package filter_test

import (
	"testing"

	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

func TestSmoke(t *testing.T) {
	cases := []struct {
		p, d string
		want bool
	}{
		{`{"a":["x"]}`, `{"a":"x"}`, true},
		{`{"a":["x"]}`, `{"a":"y"}`, false},
		{`{"a":[300]}`, `{"a":300.0}`, true},
		{`{"a":[{"numeric":[">",1,"<=",5]}]}`, `{"a":5}`, true},
		{`{"a":[{"numeric":[">",1,"<=",5]}]}`, `{"a":"5"}`, false},
		{`{"e":{"f":["Anna"],"l":["Jones"]}}`, `{"e":[{"f":"Anna","l":"Smith"},{"f":"Peter","l":"Jones"}]}`, false},
		{`{"e":{"f":["Anna"],"l":["Jones"]}}`, `{"e":[{"f":"Anna","l":"Jones"},{"f":"Peter","l":"Jones"}]}`, true},
		{`{"a":[{"exists":false}]}`, `{"b":1}`, true},
		{`{"a":[{"exists":true}]}`, `{"a":null}`, true},
		{`{"a":[{"exists":true}]}`, `{"a":{"b":1}}`, false},
		{`{"a":[{"anything-but":"x"}]}`, `{}`, false},
		{`{"a":[{"anything-but":"x"}]}`, `{"a":null}`, true},
		{`{"$or":[{"a":["1"]},{"b":["2"]}]}`, `{"b":"2"}`, true},
		{`{"a":[{"equals-ignore-case":"école"}]}`, `{"a":"ÉCOLE"}`, true},
		{`{"a":[{"prefix":{"equals-ignore-case":"AB"}}]}`, `{"a":"abc"}`, true},
	}
	for _, c := range cases {
		p, err := filter.Compile(c.p)
		if err != nil {
			t.Fatalf("%s: %v", c.p, err)
		}
		got, err := p.Match([]byte(c.d))
		if err != nil || got != c.want {
			t.Errorf("%s on %s = %v, %v; want %v", c.p, c.d, got, err, c.want)
		}
	}
	cr, err := filter.NewCriteria([]string{`{"value":{"status":["CREATED"]}}`, `{"value":[{"prefix":"Hello"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	ev := kafkaeventtest.NewBuilder().Add("t", 0, []byte(`{"status":"CREATED"}`)).Add("t", 0, []byte("Hello, world")).Add("t", 0, []byte(`{"status":"X"}`)).Event()
	rs := ev.Partitions[0].Records
	for i, want := range []bool{true, true, false} {
		if got, err := cr.MatchKafka(&rs[i]); got != want || err != nil {
			t.Errorf("kafka record %d: MatchKafka = %v, %v; want %v", i, got, err, want)
		}
	}
	t.Logf("%+v", cr.ExplainKafka(&rs[2]))
}
