package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/test/kubeletsim"
	"github.com/joist-dev/joist/test/testenv"
)

// windowsSpecs are a Windows pool (windows2022@latest, tainted as Windows
// pools usually are) beside a Linux one, and a pod of each OS.
const windowsSpecs = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: windows}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: windows}
      requirements:
      - {key: kubernetes.io/os, operator: In, values: [windows]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      taints:
      - {key: os, value: windows, effect: NoSchedule}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: windows}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-windows-cluster
  amiSelectorTerms: [{alias: windows2022@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: linux}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: linux}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: linux}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-windows-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: "*"}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: iis}
spec:
  replicas: 1
  selector: {matchLabels: {app: iis}}
  template:
    metadata: {labels: {app: iis}}
    spec:
      nodeSelector: {kubernetes.io/os: windows}
      tolerations:
      - {key: os, operator: Equal, value: windows, effect: NoSchedule}
      containers:
      - name: iis
        image: mcr.microsoft.com/windows/servercore/iis
        resources: {requests: {cpu: 500m, memory: 1Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers:
      - name: web
        image: nginx
        resources: {requests: {cpu: 500m, memory: 1Gi}}
`

// TestE2E_WindowsPodGetsAWindowsNode: a pod selecting Windows gets a node
// of the Windows pool launched from the EKS Windows Server 2022 AMI
// (read from SSM under the provisioner's own IAM policy) with
// Start-EKSBootstrap.ps1 user data; the node registers as Windows (os,
// build, 110 pods) with the pool's taint, and the pod is bound to it. The
// Linux pod beside it gets a Linux node.
func TestE2E_WindowsPodGetsAWindowsNode(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "windows-cluster", Namespace: "windows", Specs: []byte(windowsSpecs), ReadyDelay: 300 * time.Millisecond, ExtraEnv: al2023Env,
	})
	pending := createPending(t, g, deploymentPods(t, []byte(windowsSpecs)))
	nodes := allBound(t, g, pending, 90*time.Second)

	for _, p := range pending {
		n := nodes[p.Name]
		windows := p.Spec.NodeSelector["kubernetes.io/os"] == "windows"
		if !windows {
			if n.Labels["kubernetes.io/os"] != "linux" || n.Labels["karpenter.sh/nodepool"] != "linux" || n.Labels[model.LabelWindowsBuild] != "" {
				t.Errorf("Linux pod %s bound to node %s labelled %v", p.Name, n.Name, sortedPairs(n.Labels))
			}
			continue
		}
		want := map[string]string{"kubernetes.io/os": "windows", model.LabelWindowsBuild: "10.0.20348", "kubernetes.io/arch": "amd64", "karpenter.sh/nodepool": "windows"}
		for k, v := range want {
			if n.Labels[k] != v {
				t.Errorf("Windows node %s: %s=%q, want %q (labels %v)", n.Name, k, n.Labels[k], v, sortedPairs(n.Labels))
			}
		}
		if got := n.Status.Capacity.Pods().Value(); got != 110 {
			t.Errorf("Windows node pod capacity %d, want 110", got)
		}
		if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "os" || n.Spec.Taints[0].Value != "windows" {
			t.Errorf("Windows node taints %v, want the pool's os=windows:NoSchedule", n.Spec.Taints)
		}
	}
	insts := poolInstances(g, "windows")
	if len(insts) != 1 {
		t.Fatalf("windows instances %+v, want one", insts)
	}
	reg, err := kubeletsim.ParseUserData(insts[0].UserData)
	if err != nil {
		t.Fatal(err)
	}
	if reg.Format != "Windows" || reg.ClusterName != "windows-cluster" || reg.MaxPods != 110 {
		t.Errorf("user data: format %s, cluster %s, max pods %d; want Windows, windows-cluster, 110", reg.Format, reg.ClusterName, reg.MaxPods)
	}
	param := "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-" + g.Opts.K8sVersion + "/image_id"
	out, err := ssm.NewFromConfig(g.AWS).GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(param)})
	if err != nil {
		t.Fatal(err)
	}
	if id := aws.ToString(out.Parameter.Value); insts[0].ImageID != id {
		t.Errorf("the Windows node boots %s, want %s from %s", insts[0].ImageID, id, param)
	}
}
