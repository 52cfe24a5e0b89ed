#!/usr/bin/env bash
# A correct change to go-chi/chi, as a planner and an agent would make it:
# the planner's spec committed on `main` over chi v5.1.0 (the newest
# release whose tests build with Go 1.19), then on `feature` two tasks:
# a rate-limit middleware with its tests, and an example server using it.
# Two attempts, as an agent makes them: the first (branch `attempt-1`)
# limits the example per hour, so its Retry-After is over a minute and
# the example's criterion fails; the second (`attempt-2`, where `feature`
# is left) limits it per minute.
#   usage: bench/noise/chi.sh CLONE
set -euo pipefail
cd "$1"
git checkout -q -f 67be7d9cafdaeb4e04e887ff78d09e030ee43b00 # v5.1.0
git branch -q -D feature attempt-1 attempt-2 2>/dev/null || true
git checkout -q -B main
git clean -q -fdx
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
export GIT_AUTHOR_DATE=2026-12-01T00:00:00Z GIT_COMMITTER_DATE=2026-12-01T00:00:00Z

cat > gate.toml <<'EOF'
[spec]
id = "chi-rate-limit"
summary = "A per-client rate-limit middleware, and an example server using it"

[[check]]
id = "build"
run = "go build . ./middleware"

[[task]]
id = "ratelimit"
paths = ["middleware/ratelimit.go", "middleware/ratelimit_test.go"]

[[task.criterion]]
id = "limits-per-client"
text = "RateLimit(n, window) lets each client make n requests per window and answers the next with 429 and Retry-After"
run = "go test -count=1 -run 'TestRateLimit' ./middleware"
after = ["build"]
expect = "fail-to-pass"

[[task]]
id = "example"
paths = ["_examples/rate-limit/**"]
after = ["ratelimit"]

[[task.criterion]]
id = "example-retry-after"
text = "The example server's 429 says to retry within a minute"
run = 'ra=$(go run ./_examples/rate-limit -probe) && [ -n "$ra" ] && [ $ra -le 60 ]'
EOF
printf '.gate/\n' >> .gitignore
git add -A
git commit -q -m "plan: rate limiting"

git checkout -q -b feature
cat > middleware/ratelimit.go <<'EOF'
package middleware

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// RateLimit is a middleware that lets each client (the host of its remote
// address; put RealIP before it behind a proxy) make at most requests
// requests per window. Any further request in the window is answered with
// 429 Too Many Requests and a Retry-After header giving the seconds until
// the window ends.
func RateLimit(requests int, window time.Duration) func(http.Handler) http.Handler {
	l := &rateLimiter{
		requests: requests,
		window:   window,
		now:      time.Now,
		clients:  map[string]rateWindow{},
	}
	return l.handler
}

type rateWindow struct {
	start time.Time
	count int
}

type rateLimiter struct {
	mu       sync.Mutex
	requests int
	window   time.Duration
	now      func() time.Time
	clients  map[string]rateWindow
}

// allow counts a request of client and says how long it must wait when it
// is over the limit.
func (l *rateLimiter) allow(client string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	w, ok := l.clients[client]
	if !ok || now.Sub(w.start) >= l.window {
		if len(l.clients) > 10000 {
			l.forgetEnded(now)
		}
		l.clients[client] = rateWindow{start: now, count: 1}
		return true, 0
	}
	if w.count < l.requests {
		w.count++
		l.clients[client] = w
		return true, 0
	}
	return false, w.start.Add(l.window).Sub(now)
}

// forgetEnded drops the clients whose window has ended.
func (l *rateLimiter) forgetEnded(now time.Time) {
	for c, w := range l.clients {
		if now.Sub(w.start) >= l.window {
			delete(l.clients, c)
		}
	}
}

func (l *rateLimiter) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			client = r.RemoteAddr
		}
		ok, wait := l.allow(client)
		if !ok {
			seconds := int((wait + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.Itoa(seconds))
			http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}
EOF
cat > middleware/ratelimit_test.go <<'EOF'
package middleware

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

func TestRateLimitPerClient(t *testing.T) {
	h := RateLimit(2, time.Minute)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	get := func(addr string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for i := 0; i < 2; i++ {
		if w := get("10.0.0.1:1234"); w.Code != http.StatusOK {
			t.Fatalf("request %d: status %d, want 200", i+1, w.Code)
		}
	}
	w := get("10.0.0.1:5678")
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("third request: status %d, want 429", w.Code)
	}
	ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
	if err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q, want 1 to 60 seconds", w.Header().Get("Retry-After"))
	}
	if w := get("10.0.0.2:1234"); w.Code != http.StatusOK {
		t.Fatalf("another client: status %d, want 200", w.Code)
	}
}

func TestRateLimitWindowEnds(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &rateLimiter{requests: 1, window: time.Minute, now: func() time.Time { return now }, clients: map[string]rateWindow{}}
	if ok, _ := l.allow("a"); !ok {
		t.Fatal("first request refused")
	}
	now = now.Add(45 * time.Second)
	if ok, wait := l.allow("a"); ok || wait != 15*time.Second {
		t.Fatalf("second request: allowed %v, wait %v; want refused, 15s", ok, wait)
	}
	now = now.Add(15 * time.Second)
	if ok, _ := l.allow("a"); !ok {
		t.Fatal("request after the window refused")
	}
}
EOF
mkdir -p _examples/rate-limit
cat > _examples/rate-limit/main.go <<'EOF'
// Rate-limit serves a page each client may load ten times a minute.
//
// With -probe it makes eleven requests in process instead and prints the
// Retry-After of the last one.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

func router() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.RealIP)
	r.Use(middleware.RateLimit(10, time.Hour))
	r.Get("/", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello\n"))
	})
	return r
}

func main() {
	probe := flag.Bool("probe", false, "print the Retry-After of an eleventh request and exit")
	flag.Parse()
	if !*probe {
		http.ListenAndServe(":3333", router())
		return
	}
	h := router()
	var w *httptest.ResponseRecorder
	for i := 0; i < 11; i++ {
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	}
	fmt.Println(w.Header().Get("Retry-After"))
}
EOF
gofmt -l middleware _examples/rate-limit | (! grep .)
git add -A
git commit -q -m "middleware: RateLimit, per client, with Retry-After; an example server"
git branch -q -f attempt-1
sed -i 's/RateLimit(10, time.Hour)/RateLimit(10, time.Minute)/' _examples/rate-limit/main.go
git commit -q -am "example: ten requests a minute, as it says"
git branch -q -f attempt-2
