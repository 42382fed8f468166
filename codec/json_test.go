package codec

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type jsonItem struct {
	SKU   string  `json:"sku"`
	Qty   int     `json:"qty"`
	Price float64 `json:"price"`
}

type jsonOrder struct {
	ID       string            `json:"id"`
	Customer string            `json:"customer,omitempty"`
	Amount   float64           `json:"amount"`
	Count    int32             `json:"count"`
	Big      uint64            `json:"big"`
	Flag     bool              `json:"flag"`
	Items    []jsonItem        `json:"items"`
	Tags     map[string]string `json:"tags"`
	Ptr      *string           `json:"ptr"`
	Any      any               `json:"any"`
	Raw      json.RawMessage   `json:"raw"`
	Num      json.Number       `json:"num"`
	Quoted   int               `json:"quoted,string"`
	Arr      [2]int            `json:"arr"`
	Skip     string            `json:"-"`
	Embedded
}

type Embedded struct {
	Inner string `json:"inner"`
}

// jsonDocs are documents on which JSON's decoder must agree with encoding/json.
var jsonDocs = []string{
	`{"id":"a","amount":1.5,"items":[{"sku":"x","qty":2,"price":3}],"tags":{"k":"v"}}`,
	`{"ID":"case","AMOUNT":2,"Items":[{"SKU":"y"}]}`,           // case-insensitive names
	`{"id":"first","id":"second"}`,                             // duplicate keys: last wins
	`{"tags":{"a":"1","a":"2"}}`,                               // duplicate map keys
	`{"id":"\u00e9\u4e2d\ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t"}`, // escapes, a surrogate pair
	`{"id":"\ud800"}`,                                                // a lone high surrogate
	`{"id":"\udc00x\ud800\u0041"}`,                                   // lone surrogates in a row
	"{\"id\":\"bad \xff utf8 \xc3\"}",                                // invalid UTF-8 in a string
	`{"unknown":{"deep":[1,{"x":null}]},"id":"u"}`,                   // unknown fields
	`{"amount":1e308,"count":2147483647,"big":18446744073709551615}`, // limits
	`{"count":2147483648}`,                                           // int32 overflow
	`{"big":-1}`,                                                     // negative into uint
	`{"amount":1e400}`,                                               // float overflow
	`{"count":1.5}`,                                                  // fraction into an int
	`{"count":"1"}`,                                                  // string into an int
	`{"quoted":"42"}`,                                                // ,string option
	`{"quoted":42}`,                                                  // ,string option, not a string
	`{"amount":-0,"count":-0}`,                                       //
	`{"amount":0.1e-2,"any":12345678901234567890}`,                   // any: float64
	`{"num":12.5e3,"raw":{"a" : [1, 2]}}`,                            // Number, RawMessage
	`{"num":"12"}`,                                                   // Number from a string
	`{"ptr":null,"items":null,"tags":null,"any":null}`,               // nulls
	`{"ptr":"p","flag":true}`,                                        //
	`{"flag":"true"}`,                                                // wrong type
	`{"arr":[1,2,3]}`,                                                // array longer than [2]int
	`{"arr":[1]}`,                                                    //
	`{"inner":"embedded","-":"dash"}`,                                //
	`{"any":{"z":1,"a":[true,false,null,"s",1.25]}}`,                 //
	` 	{"id" : "spaces" } 
`, //
	`{"id":"a"} {"id":"b"}`, // two documents
	`{"id":"a"}x`,           // trailing garbage
	`{"id":"a",}`,           // trailing comma
	`{"id":'a'}`,            // single quotes
	`{"id":"a"`,             // truncated
	`{"amount":01}`,         // leading zero
	`{"amount":1.}`,         //
	`{"amount":.5}`,         //
	`{"amount":+1}`,         //
	`{"amount":NaN}`,        //
	`{"id":"tab	inside"}`,   // control character in a string
	`{"id":"\x"}`,           // bad escape
	`{"id":"\u12"}`,         // short \u
	`[]`,                    // wrong top-level type
	`"string"`,              //
	`null`,                  // null into a struct
	`123`,                   //
	``,                      // empty
	`   `,                   //
	`{"items":[{"qty":1},{"qty":"x"},{"qty":3}]}`, // an error in the middle
	`{"tags":{"k":1}}`,                            //
	`{"id":null,"count":null,"flag":null}`,        // null into non-pointers: unchanged
	`{"a":{"b":{"c":{"d":{"e":{"f":[[[[[[1]]]]]]}}}}}}`,
	`{"id":"` + strings.Repeat("x", 5000) + `"}`,
	`{"id":"\u0000"}`,
	`{"amount":1E+2,"count":-0,"big":0}`,
}

// TestJSONDifferential holds JSON's decoder to encoding/json: the same value, or an error
// from both, on every document into a struct, a map and an any.
func TestJSONDifferential(t *testing.T) {
	for i, doc := range jsonDocs {
		jsonSame[jsonOrder](t, i, []byte(doc))
		jsonSame[map[string]any](t, i, []byte(doc))
		jsonSame[any](t, i, []byte(doc))
		jsonSame[[]jsonItem](t, i, []byte(doc))
		jsonSame[string](t, i, []byte(doc))
	}
}

func jsonSame[T any](t *testing.T, i int, doc []byte) {
	t.Helper()
	var want, got T
	errWant := json.Unmarshal(doc, &want)
	errGot := jsonUnmarshal(doc, &got)
	if (errWant == nil) != (errGot == nil) {
		t.Errorf("doc %d %q into %T: encoding/json says %v, JSON's decoder %v", i, trunc(doc), want, errWant, errGot)
		return
	}
	if errWant == nil && !reflect.DeepEqual(want, got) {
		t.Errorf("doc %d %q into %T:\nencoding/json %#v\ndecoder       %#v", i, trunc(doc), want, want, got)
	}
}

func trunc(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

func TestJSONRoundTrip(t *testing.T) {
	c := JSON[jsonOrder]()
	if c.Format() != FormatJSON {
		t.Fatalf("Format() = %q", c.Format())
	}
	p := "p"
	in := jsonOrder{ID: "ord-1", Amount: 12.5, Items: []jsonItem{{"a", 1, 2}}, Ptr: &p, Tags: map[string]string{"é": "\u2028"}, Num: "3", Raw: json.RawMessage(`{"x":1}`), Embedded: Embedded{"in"}}
	b, err := c.Encode(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Decode(context.Background(), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n in %#v\nout %#v", in, out)
	}
	if _, err := c.Decode(context.Background(), []byte(`{"id":`), nil); err == nil {
		t.Fatal("truncated JSON decoded without an error")
	}
	var se *json.SyntaxError
	_ = errors.As(err, &se)
}

// FuzzJSONDifferential: JSON's decoder agrees with encoding/json on any input.
func FuzzJSONDifferential(f *testing.F) {
	for _, d := range jsonDocs {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		jsonSame[jsonOrder](t, 0, doc)
		jsonSame[map[string]any](t, 0, doc)
		jsonSame[any](t, 0, doc)
	})
}
