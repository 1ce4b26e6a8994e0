// xrate_trace.go: random traces through the real golang.org/x/time/rate
// (Debian's golang-golang-x-time-dev) on a fake clock, every answer printed,
// for tests/peers/xrate_replay.c to replay through sl_limiter and compare.
//
// Usage: xrate_trace SEED TRACES. One line per step:
//
//	T limit burst             a new limiter (full), limit tokens per second
//	R id n t ok tta           ReserveN at t (ns offset): ok, time to act
//	A n t ok                  AllowN at t
//	C id t                    CancelAt t of reservation id (each at most once,
//	                          never at exactly its time to act)
//	L limit t / B burst t     SetLimitAt / SetBurstAt
//	K t tokens                TokensAt t (not a change)
//	X t                       the clock stepped back to t: the trace ends here
//	                          (x/time/rate moves its clock back, sluice does not)
//
// Rates are 1, 2, 4 or 8 per second and times move in steps of 1/64 s, so
// x/time/rate's float64 arithmetic is exact on most traces.
package main

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

const step = int64(time.Second / 64)

var t0 = time.Unix(1000, 0)

func at(t int64) time.Time { return t0.Add(time.Duration(t)) }

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: xrate_trace SEED TRACES")
		os.Exit(2)
	}
	seed, _ := strconv.ParseInt(os.Args[1], 10, 64)
	traces, _ := strconv.Atoi(os.Args[2])
	rng := rand.New(rand.NewSource(seed))
	rates := []int{1, 2, 4, 8}
	out := make([]byte, 0, 1<<20)
	for i := 0; i < traces; i++ {
		limit := rates[rng.Intn(len(rates))]
		burst := 1 + rng.Intn(5)
		lim := rate.NewLimiter(rate.Limit(limit), burst)
		out = append(out, fmt.Sprintf("T %d %d\n", limit, burst)...)
		var res []*rate.Reservation
		var tta []int64
		used := map[int]bool{}
		t := int64(0)
		steps := 5 + rng.Intn(40)
	trace:
		for s := 0; s < steps; s++ {
			switch k := rng.Intn(100); {
			case k < 30:
				t += step * int64(rng.Intn(20))
			case k < 33:
				t += step * int64(rng.Intn(2000))
			}
			if rng.Intn(60) == 0 && t > 0 {
				back := t - step*int64(1+rng.Intn(40))
				if back < 0 {
					back = 0
				}
				out = append(out, fmt.Sprintf("X %d\n", back)...)
				break trace
			}
			switch k := rng.Intn(100); {
			case k < 35:
				n := rng.Intn(burst + 1)
				if rng.Intn(20) == 0 {
					n = burst + 1
				}
				r := lim.ReserveN(at(t), n)
				ok, when := 0, int64(0)
				if r.OK() {
					ok, when = 1, t+int64(r.DelayFrom(at(t)))
				}
				out = append(out, fmt.Sprintf("R %d %d %d %d %d\n", len(res), n, t, ok, when)...)
				res = append(res, r)
				tta = append(tta, when)
			case k < 60:
				n := 1 + rng.Intn(burst+1)
				ok := 0
				if lim.AllowN(at(t), n) {
					ok = 1
				}
				out = append(out, fmt.Sprintf("A %d %d %d\n", n, t, ok)...)
			case k < 75:
				if len(res) == 0 {
					continue
				}
				id := rng.Intn(len(res))
				if used[id] || (res[id].OK() && tta[id] == t) {
					continue
				}
				used[id] = true
				res[id].CancelAt(at(t))
				out = append(out, fmt.Sprintf("C %d %d\n", id, t)...)
			case k < 82:
				limit = rates[rng.Intn(len(rates))]
				lim.SetLimitAt(at(t), rate.Limit(limit))
				out = append(out, fmt.Sprintf("L %d %d\n", limit, t)...)
			case k < 87:
				burst = 1 + rng.Intn(5)
				lim.SetBurstAt(at(t), burst)
				out = append(out, fmt.Sprintf("B %d %d\n", burst, t)...)
			default:
				out = append(out, fmt.Sprintf("K %d %.9f\n", t, lim.TokensAt(at(t)))...)
			}
		}
		if len(out) > 1<<19 {
			os.Stdout.Write(out)
			out = out[:0]
		}
	}
	os.Stdout.Write(out)
}
