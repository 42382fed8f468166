package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ordersAPI is the local stand-in for the orders API the samples call (the template's
// OrdersApiUrl parameter, ORDERS_API_URL): each function gets its own path, /f/<Function>,
// so that the ledger knows which function applied what. Each request takes the configured
// work time, as the downstream call of a real handler would. The API is where side effects
// happen, so it is where klt counts them: every order answered 2xx is an application,
// recorded with the record it came from (the Idempotency-Key header, topic-partition-offset),
// the customer (the record's key) and the order ID.
//
// Like the payment and order APIs it stands for, it deduplicates on Idempotency-Key: a
// request whose key it has applied already is answered 200 and applied no second time, and
// counted as a duplicate. Duplicates come from the one window idempotency in the function
// cannot close: a function that dies (a timeout, a crash) after the API applied a record but
// before it recorded the record as done gets the record again.
type ordersAPI struct {
	work time.Duration
	ln   net.Listener
	srv  *http.Server

	mu       sync.Mutex
	faults   map[int64]string // order ID -> "transient" (the first attempt fails)
	attempts map[string]int   // function + " " + key -> requests
	done     map[string]bool  // function + " " + key -> applied
	applied  []application
	dups     []application // requests for a key already applied
}

// application is one order the API applied (answered 2xx).
type application struct {
	function, key, customer string
	orderID                 int64
	at                      time.Time
}

// startOrdersAPI serves the API on a free loopback port.
func startOrdersAPI(work time.Duration) (*ordersAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &ordersAPI{work: work, ln: ln, faults: map[int64]string{}, attempts: map[string]int{}, done: map[string]bool{}}
	a.srv = &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	go a.srv.Serve(ln)
	return a, nil
}

// url returns the API's URL for function fn.
func (a *ordersAPI) url(fn string) string { return "http://" + a.ln.Addr().String() + "/f/" + fn }

// close stops the API.
func (a *ordersAPI) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := a.srv.Shutdown(ctx); err != nil {
		a.srv.Close()
	}
}

// inject makes the first request of each function for order id fail with fault
// ("transient": 503).
func (a *ordersAPI) inject(id int64, fault string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults[id] = fault
}

func (a *ordersAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fn, ok := strings.CutPrefix(r.URL.Path, "/f/")
	if r.Method != http.MethodPost || !ok || fn == "" {
		http.Error(w, "POST /f/<Function> only", http.StatusNotFound)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	var o struct {
		OrderID  int64  `json:"orderId"`
		Customer string `json:"customer"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &o)
	}
	if err != nil || key == "" {
		http.Error(w, fmt.Sprintf("want an order as JSON and an Idempotency-Key header (%v)", err), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.attempts[fn+" "+key]++
	n := a.attempts[fn+" "+key]
	fault := a.faults[o.OrderID]
	a.mu.Unlock()
	if fault == "transient" && n == 1 {
		http.Error(w, "orders API unavailable (klt local: injected transient fault)", http.StatusServiceUnavailable)
		return
	}
	select {
	case <-time.After(a.work):
	case <-r.Context().Done(): // the caller gave up: nothing applied
		return
	}
	app := application{function: fn, key: key, customer: o.Customer, orderID: o.OrderID, at: time.Now()}
	a.mu.Lock()
	dup := a.done[fn+" "+key]
	if dup {
		a.dups = append(a.dups, app)
	} else {
		a.done[fn+" "+key] = true
		a.applied = append(a.applied, app)
	}
	a.mu.Unlock()
	if dup {
		w.WriteHeader(http.StatusOK) // as the first time; nothing applied again
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// applications returns a copy of the applications so far.
func (a *ordersAPI) applications() []application {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]application(nil), a.applied...)
}

// duplicates returns a copy of the requests the API recognised as already applied.
func (a *ordersAPI) duplicates() []application {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]application(nil), a.dups...)
}

// attemptsOf returns how many requests function fn made for the record key.
func (a *ordersAPI) attemptsOf(fn, key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attempts[fn+" "+key]
}
