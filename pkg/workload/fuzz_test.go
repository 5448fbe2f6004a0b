package workload

import "testing"

// FuzzRead: whatever the files hold, Read returns pods or an error, and
// never panics (joist plan reads users' files).
func FuzzRead(f *testing.F) {
	for _, seed := range []string{
		manifests,
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: 3, template: {spec: {containers: [{name: a, resources: {requests: {cpu: 100m}}}]}}}\n",
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec: {replicas: 2, volumeClaimTemplates: [{metadata: {name: d}, spec: {resources: {requests: {storage: 1Gi}}}}], template: {spec: {containers: [{name: a}]}}}\n",
		"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: 4, completions: 2, template: {spec: {containers: [{name: a}]}}}\n",
		"apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: a}]}}]\n",
		"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: a}]}}}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Read(data, "fuzz.yaml")
		if err == nil && res == nil {
			t.Fatal("no result and no error")
		}
	})
}
