package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/joist-dev/joist/pkg/forwarder"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseTakesFlagsOverEnvironment(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    settings
		wantErr string
	}{
		{
			name: "environment of infra/k8s/forwarder.yaml, in-cluster by default",
			env:  map[string]string{"CLUSTER_NAME": "prod", "EVENT_BUS_NAME": "joist-prod", "AWS_REGION": "us-west-2"},
			want: settings{cluster: "prod", bus: "joist-prod", region: "us-west-2", healthAddr: ":8081",
				debounce: forwarder.DefaultDebounce, maxWait: forwarder.DefaultMaxWait, resync: forwarder.DefaultResync},
		},
		{
			name: "a kubeconfig for local runs",
			env:  map[string]string{"CLUSTER_NAME": "dev", "EVENT_BUS_NAME": "b", "KUBECONFIG": "/k"},
			want: settings{cluster: "dev", bus: "b", kubeconfig: "/k", healthAddr: ":8081",
				debounce: forwarder.DefaultDebounce, maxWait: forwarder.DefaultMaxWait, resync: forwarder.DefaultResync},
		},
		{
			name: "flags win",
			args: []string{"--cluster=c", "--bus=arn:aws:events:us-east-1:000000000000:event-bus/x", "--debounce=2s", "--max-wait=9s", "--resync=30s", "--health-addr=127.0.0.1:9000"},
			env:  map[string]string{"CLUSTER_NAME": "prod", "EVENT_BUS_NAME": "joist-prod"},
			want: settings{cluster: "c", bus: "arn:aws:events:us-east-1:000000000000:event-bus/x", healthAddr: "127.0.0.1:9000",
				debounce: 2 * time.Second, maxWait: 9 * time.Second, resync: 30 * time.Second},
		},
		{
			name: "an empty JOIST_HEALTH_ADDR disables the health server",
			env:  map[string]string{"CLUSTER_NAME": "c", "EVENT_BUS_NAME": "b", "JOIST_HEALTH_ADDR": ""},
			want: settings{cluster: "c", bus: "b",
				debounce: forwarder.DefaultDebounce, maxWait: forwarder.DefaultMaxWait, resync: forwarder.DefaultResync},
		},
		{name: "cluster required", env: map[string]string{"EVENT_BUS_NAME": "b"}, wantErr: "--cluster"},
		{name: "bus required", env: map[string]string{"CLUSTER_NAME": "c"}, wantErr: "--bus"},
		{name: "stray argument", args: []string{"--cluster=c", "--bus=b", "extra"}, wantErr: "unexpected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(tt.args, env(tt.env), io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("settings = %+v, want %+v", got, tt.want)
			}
		})
	}
}

type syncedFlag bool

func (s syncedFlag) Synced() bool { return bool(s) }

func TestReadyzWaitsForSyncedCaches(t *testing.T) {
	tests := []struct {
		synced bool
		path   string
		want   int
	}{
		{synced: false, path: "/healthz", want: http.StatusOK},
		{synced: false, path: "/readyz", want: http.StatusServiceUnavailable},
		{synced: true, path: "/readyz", want: http.StatusOK},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		health(syncedFlag(tt.synced)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
		if rec.Code != tt.want {
			t.Errorf("synced=%v %s = %d, want %d", tt.synced, tt.path, rec.Code, tt.want)
		}
	}
}
