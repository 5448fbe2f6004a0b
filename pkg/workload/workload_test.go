package workload

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const manifests = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {a: b}}
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: 250m}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: one}
spec:
  selector: {matchLabels: {app: one}}
  template:
    metadata: {labels: {app: one}}
    spec: {containers: [{name: c, image: x}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      storageClassName: gp3
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 10Gi}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  replicas: 2
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec: {containers: [{name: c, image: x}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  parallelism: 5
  completions: 3
  template:
    metadata: {labels: {job: batch}}
    spec: {restartPolicy: Never, containers: [{name: c, image: x}]}
---
apiVersion: v1
kind: Pod
metadata: {name: lone}
spec: {containers: [{name: c, image: x}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3}
provisioner: ebs.csi.aws.com
---
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: default}
spec: {}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: listed, namespace: other}
  spec: {containers: [{name: c, image: x}]}
`

func TestReadExpandsControllers(t *testing.T) {
	res, err := Read([]byte(manifests), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, p := range res.Pods {
		count[ownerKind(p)]++
		if p.Status.Phase != corev1.PodPending || len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Reason != corev1.PodReasonUnschedulable {
			t.Errorf("pod %s is not pending-unschedulable: %+v", p.Name, p.Status)
		}
		if p.UID == "" || p.Namespace == "" {
			t.Errorf("pod %s lacks uid or namespace", p.Name)
		}
	}
	want := map[string]int{"ReplicaSet": 3 + 1 + 2, "StatefulSet": 2, "Job": 3, "": 2}
	if !reflect.DeepEqual(count, want) {
		t.Errorf("pods by owner %v, want %v", count, want)
	}
	if len(res.DaemonSets) != 1 || res.DaemonSets[0].Name != "agent" {
		t.Errorf("daemonsets %v", res.DaemonSets)
	}
	if len(res.StorageClasses) != 1 {
		t.Errorf("storage classes %v", res.StorageClasses)
	}
	if len(res.Others) != 1 || res.Others[0].Kind != "Provisioner" || !strings.Contains(string(res.Others[0].Raw), `"name":"default"`) {
		t.Errorf("others %+v", res.Others)
	}
}

func ownerKind(p *corev1.Pod) string {
	if len(p.OwnerReferences) == 0 {
		return ""
	}
	return p.OwnerReferences[0].Kind
}

func TestDeploymentPods(t *testing.T) {
	res, err := Read([]byte(manifests), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var web []*corev1.Pod
	for _, p := range res.Pods {
		if p.Labels["app"] == "web" {
			web = append(web, p)
		}
	}
	if len(web) != 3 {
		t.Fatalf("%d web pods", len(web))
	}
	hash := web[0].Labels[LabelPodTemplateHash]
	names := map[string]bool{}
	for _, p := range web {
		if p.Namespace != "shop" || p.Labels[LabelPodTemplateHash] != hash || p.Annotations["a"] != "b" {
			t.Errorf("pod %s: %v %v", p.Name, p.Labels, p.Annotations)
		}
		if !strings.HasPrefix(p.Name, "web-"+hash+"-") {
			t.Errorf("name %s", p.Name)
		}
		names[p.Name] = true
		if p.OwnerReferences[0].Name != "web-"+hash || p.OwnerReferences[0].Controller == nil || !*p.OwnerReferences[0].Controller {
			t.Errorf("owner %+v", p.OwnerReferences)
		}
	}
	if len(names) != 3 {
		t.Errorf("names not unique: %v", names)
	}
}

func TestStatefulSetPodsAndClaims(t *testing.T) {
	res, err := Read([]byte(manifests), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var db []*corev1.Pod
	for _, p := range res.Pods {
		if p.Labels["app"] == "db" {
			db = append(db, p)
		}
	}
	if len(db) != 2 || db[0].Name != "db-0" || db[1].Name != "db-1" {
		t.Fatalf("db pods %v", db)
	}
	if db[1].Labels[LabelStatefulSetPodName] != "db-1" {
		t.Errorf("labels %v", db[1].Labels)
	}
	if len(db[1].Spec.Volumes) != 1 || db[1].Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-db-1" {
		t.Errorf("volumes %+v", db[1].Spec.Volumes)
	}
	if len(db[0].Spec.Volumes) != 1 || db[0].Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-db-0" {
		t.Errorf("db-0 volumes changed by db-1: %+v", db[0].Spec.Volumes)
	}
	if len(res.PersistentVolumeClaims) != 2 || res.PersistentVolumeClaims[1].Name != "data-db-1" || *res.PersistentVolumeClaims[1].Spec.StorageClassName != "gp3" {
		t.Errorf("claims %+v", res.PersistentVolumeClaims)
	}
}

func TestReadIsDeterministic(t *testing.T) {
	a, err := Read([]byte(manifests), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Read([]byte(manifests), "test.yaml")
	for i := range a.Pods {
		if a.Pods[i].Name != b.Pods[i].Name || a.Pods[i].UID != b.Pods[i].UID {
			t.Fatalf("pod %d differs: %s/%s vs %s/%s", i, a.Pods[i].Name, a.Pods[i].UID, b.Pods[i].Name, b.Pods[i].UID)
		}
	}
}

func TestReadReportsBadDocuments(t *testing.T) {
	_, err := Read([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: many}\n"), "bad.yaml")
	if err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), `Deployment "x"`) {
		t.Errorf("error %v", err)
	}
	// Each value that does not decode is named by its path: a quantity's
	// own error names no field.
	_, err = Read([]byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - {name: a, resources: {requests: {cpu: 500m}}}
        - {name: b, resources: {requests: {cpu: lots, memory: 1x}}}
`), "quantities.yaml")
	for _, want := range []string{
		`quantities.yaml (document 1, Deployment "web"): spec.template.spec.containers[1].resources.requests[cpu]: invalid value "lots": quantities must match`,
		`quantities.yaml (document 1, Deployment "web"): spec.template.spec.containers[1].resources.requests[memory]: invalid value "1x": quantities must match`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant it to say %s", err, want)
		}
	}
	if _, err := Read([]byte("a: [unclosed"), "worse.yaml"); err == nil {
		t.Error("broken YAML accepted")
	}
	res, err := Read([]byte("---\n# only a comment\n---\n"), "empty.yaml")
	if err != nil || len(res.Pods)+len(res.Others) != 0 {
		t.Errorf("empty documents: %v %+v", err, res)
	}
}

// TestReadKeepsSpreadSelectorSources: the controllers the pods name, with
// their selectors (a Deployment's ReplicaSet selects its revision's
// pod-template-hash too), and the Services, for default spread constraints.
func TestReadKeepsSpreadSelectorSources(t *testing.T) {
	res, err := Read([]byte(manifests+"---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {selector: {app: web}}\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]map[string]string{}
	for _, rs := range res.ReplicaSets {
		owners[rs.Namespace+"/"+rs.Name] = rs.Spec.Selector.MatchLabels
	}
	for _, p := range res.Pods {
		if ownerKind(p) != "ReplicaSet" {
			continue
		}
		sel, ok := owners[p.Namespace+"/"+p.OwnerReferences[0].Name]
		if !ok {
			t.Fatalf("pod %s names ReplicaSet %s, which is not kept", p.Name, p.OwnerReferences[0].Name)
		}
		for k, v := range sel {
			if p.Labels[k] != v {
				t.Errorf("pod %s (labels %v) is not selected by its ReplicaSet's %v", p.Name, p.Labels, sel)
			}
		}
		if p.Labels["app"] == "web" && sel[LabelPodTemplateHash] == "" {
			t.Errorf("the Deployment's ReplicaSet selector %v lacks %s", sel, LabelPodTemplateHash)
		}
	}
	if len(res.StatefulSets) != 1 || res.StatefulSets[0].Spec.Selector.MatchLabels["app"] != "db" {
		t.Errorf("statefulsets %+v", res.StatefulSets)
	}
	if len(res.Services) != 1 || res.Services[0].Namespace != "shop" || res.Services[0].Spec.Selector["app"] != "web" {
		t.Errorf("services %+v", res.Services)
	}
}

// TestReadRefusesMorePodsThanItPlans: a replica count mistyped by a few
// digits is an error naming the object and the field, before any pod is
// made, not a machine out of memory; a Job whose completions are negative
// runs no pod.
func TestReadRefusesMorePodsThanItPlans(t *testing.T) {
	deployment := func(name string, n int) string {
		return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %s}\nspec: {replicas: %d, template: {spec: {containers: [{name: a}]}}}\n", name, n)
	}
	for _, tc := range []struct {
		name, files, want string
	}{
		{"replicas", deployment("big", 2000000000),
			`f.yaml (document 1, Deployment "big"): spec.replicas: 2000000000 pods would make 2000000000 in all, more than the 1000000 joist plan reads`},
		{"in all", deployment("small", 2) + "---\n" + deployment("big", MaxPods-1),
			`f.yaml (document 2, Deployment "big"): spec.replicas: 999999 pods would make 1000001 in all, more than the 1000000 joist plan reads`},
		{"statefulset", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec: {replicas: 1500000, template: {spec: {containers: [{name: a}]}}}\n",
			`f.yaml (document 1, StatefulSet "db"): spec.replicas: 1500000 pods would make 1500000 in all`},
		{"job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: 2000000, template: {spec: {containers: [{name: a}]}}}\n",
			`f.yaml (document 1, Job "j"): spec.parallelism: 2000000 pods would make 2000000 in all`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read([]byte(tc.files), "f.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant %s", err, tc.want)
			}
		})
	}
	res, err := Read([]byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: 3, completions: -1, template: {spec: {containers: [{name: a}]}}}\n"), "f.yaml")
	if err != nil || len(res.Pods) != 0 {
		t.Errorf("negative completions: %v, %d pods; want none and no error", err, len(res.Pods))
	}
}
