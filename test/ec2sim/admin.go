package ec2sim

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// adminPrefix is where the control surface lives, out of the way of the EC2
// API (which is always POST /). It lets a demo or an out-of-process kubelet
// simulator see the instances (user data included, which the EC2 API does
// not return from DescribeInstances) and inject the faults tests inject
// in-process:
//
//	GET  /_ec2sim/health
//	GET  /_ec2sim/instances                  JSON []Instance
//	GET  /_ec2sim/calls                      JSON {action: count}
//	POST /_ec2sim/terminate?id=i-...         TerminateExternally (spot interruption)
//	POST /_ec2sim/capacity?instanceType=&zone=&capacityType=&insufficient=true|false
//	POST /_ec2sim/fail?action=&code=&status=&n=
const adminPrefix = "/_ec2sim/"

func (s *Sim) serveAdmin(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	route := r.Method + " " + r.URL.Path[len(adminPrefix)-1:]
	switch route {
	case "GET /health":
		_, _ = w.Write([]byte("ok\n"))
	case "GET /instances":
		writeJSON(w, s.Instances())
	case "GET /calls":
		writeJSON(w, s.CallCounts())
	case "POST /terminate":
		if err := s.TerminateExternally(q.Get("id")); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case "POST /capacity":
		on, err := strconv.ParseBool(q.Get("insufficient"))
		if err != nil {
			http.Error(w, "ec2sim: insufficient must be true or false: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.SetInsufficientCapacity(q.Get("instanceType"), q.Get("zone"), q.Get("capacityType"), on)
		w.WriteHeader(http.StatusNoContent)
	case "POST /fail":
		status, err1 := strconv.Atoi(q.Get("status"))
		n, err2 := strconv.Atoi(q.Get("n"))
		if err1 != nil || err2 != nil || q.Get("code") == "" {
			http.Error(w, "ec2sim: fail needs code, numeric status and n", http.StatusBadRequest)
			return
		}
		s.FailNext(q.Get("action"), q.Get("code"), status, n)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "ec2sim: no admin route "+route, http.StatusNotFound)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, "ec2sim: encoding JSON: "+err.Error(), http.StatusInternalServerError)
	}
}
