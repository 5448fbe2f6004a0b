package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/joist-dev/joist/pkg/iampolicy"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/test/testenv"
)

// TestE2E_ProvisionerRunsWithItsOwnIAM: a scale-up where every AWS call
// of the functions is authorized against their own iampolicy statements
// (and every Kubernetes call against their own RBAC): the launch is the
// provisioner's, nothing was refused.
func TestE2E_ProvisionerRunsWithItsOwnIAM(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "own-iam", Namespace: "own-iam", Specs: seed(t), ReadyDelay: 300 * time.Millisecond,
	})
	ps := createPending(t, g, smallPods(t, "iam", 3))
	waitBound(t, g, ps, 90*time.Second)
	launchedBy := map[string]bool{}
	for _, gr := range testenv.Grants() {
		if gr.Action == "ec2:CreateFleet" && strings.Contains(gr.Resource, ":instance/") {
			launchedBy[gr.Principal] = true
		}
	}
	if !launchedBy[iampolicy.Provisioner] {
		t.Errorf("no CreateFleet of an instance was authorized for the provisioner (grants by %v)", launchedBy)
	}
	// NewGround's cleanup fails the test on any refusal; say it here too.
	if r := g.IAMRefused(); len(r) > 0 {
		t.Errorf("IAM refused: %v", r)
	}
}

// TestE2E_MissingStatementIsRefused: the ground is as strict as AWS. With
// the statement that lets a launch tag what it creates taken out of the
// provisioner's policy, CreateFleet is refused and nothing is launched.
func TestE2E_MissingStatementIsRefused(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "no-tag", Namespace: "no-tag", Specs: seed(t), AllowRefusals: true,
		Policy: func(principal string, p iampolicy.Policy) iampolicy.Policy {
			if principal == iampolicy.Provisioner {
				return p.Without("TagOnCreate")
			}
			return p
		},
	})
	createPending(t, g, smallPods(t, "notag", 1))
	eventually(t, 60*time.Second, "CreateTags refused for the provisioner", func() (bool, error) {
		for _, r := range g.IAMRefused() {
			if strings.HasPrefix(r, "provisioner: ec2:CreateTags") {
				return true, nil
			}
		}
		return false, nil
	})
	if ids := launched(g); len(ids) != 0 {
		t.Fatalf("launched %v without the permission to tag them", ids)
	}
}

// TestE2E_RegistrationTimeoutTerminatesUnderIAM: an instance whose node
// never registers is terminated by the reaper, the only function allowed
// to terminate, and its pods get a replacement.
func TestE2E_RegistrationTimeoutTerminatesUnderIAM(t *testing.T) {
	var mu sync.Mutex
	var broken string
	g := testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "regtimeout", Namespace: "regtimeout", Specs: seed(t), ReadyDelay: 300 * time.Millisecond,
		ReaperEvery: 2 * time.Second, ExtraEnv: map[string]string{"JOIST_REGISTRATION_TIMEOUT": "5s"},
		KubeletSkip: func(id string) bool {
			mu.Lock()
			defer mu.Unlock()
			if broken == "" {
				broken = id // the first instance never joins
			}
			return id == broken
		},
	})
	ps := createPending(t, g, deploymentPods(t, seed(t)))
	nodes := waitBound(t, g, ps, 120*time.Second)
	mu.Lock()
	bad := broken
	mu.Unlock()
	eventually(t, 60*time.Second, "the instance that never registered terminated", func() (bool, error) {
		inst, ok := g.EC2.Instance(bad)
		return ok && (inst.State == "terminated" || inst.State == "shutting-down"), nil
	})
	terminatedBy := map[string]bool{}
	for _, gr := range testenv.Grants() {
		if gr.Action == "ec2:TerminateInstances" && strings.HasSuffix(gr.Resource, "/"+bad) {
			terminatedBy[gr.Principal] = true
		}
	}
	if !terminatedBy[iampolicy.Reaper] || len(terminatedBy) != 1 {
		t.Errorf("terminate of %s authorized for %v, want the reaper alone", bad, terminatedBy)
	}
	for p, n := range nodes {
		node, err := g.Kube.Client.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pods.InstanceID(node.Spec.ProviderID) == bad {
			t.Errorf("pod %s bound to the broken instance", p)
		}
	}
	if ids := launched(g); len(ids) != 2 {
		t.Errorf("launched %v, want the broken one and its replacement", ids)
	}
}

// TestE2E_ForeignTaggedInstanceNotTerminated: someone who can tag
// instances puts joist.sh/cluster on an instance of theirs (launched from
// their own template). It never becomes a node, yet the reaper leaves it
// alone: only instances from the cluster's own launch templates are
// Joist's to collect.
func TestE2E_ForeignTaggedInstanceNotTerminated(t *testing.T) {
	logs := &testenv.LogBuffer{}
	var g *testenv.Ground
	var foreign string
	var mu sync.Mutex
	g = testenv.NewGround(t, testenv.GroundOptions{
		Cluster: "foreign", Namespace: "foreign", Specs: seed(t), NoForwarder: true, Logs: logs,
		ReaperEvery: time.Second, ExtraEnv: map[string]string{"JOIST_REGISTRATION_TIMEOUT": "2s"},
		KubeletSkip: func(id string) bool {
			mu.Lock()
			defer mu.Unlock()
			return id == foreign
		},
	})
	ctx := context.Background()
	api := ec2.NewFromConfig(g.AWS, func(o *ec2.Options) { o.BaseEndpoint = aws.String(g.EC2URL) })
	images, err := api.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{"x86_64"}}}})
	if err != nil || len(images.Images) == 0 {
		t.Fatalf("x86_64 images: %v", err)
	}
	lt, err := api.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("someone-elses"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: images.Images[0].ImageId},
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock() // the kubelet must not see the instance before its id is known
	out, err := api.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: lt.LaunchTemplate.LaunchTemplateId, Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: aws.String(g.EC2.Subnets()[0].ID)}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: aws.String(launch.TagCluster), Value: aws.String("foreign")},
		}}},
	})
	if err != nil || len(out.Instances) == 0 || len(out.Instances[0].InstanceIds) == 0 {
		mu.Unlock()
		var errs []string
		if out != nil {
			for _, e := range out.Errors {
				errs = append(errs, aws.ToString(e.ErrorCode)+": "+aws.ToString(e.ErrorMessage))
			}
		}
		t.Fatalf("launch the foreign instance: %v %v", err, errs)
	}
	foreign = out.Instances[0].InstanceIds[0]
	mu.Unlock()
	eventually(t, 60*time.Second, "the reaper considered the foreign instance", func() (bool, error) {
		return strings.Contains(logs.String(), "not launched from one of the cluster's launch templates") &&
			strings.Contains(logs.String(), foreign), nil
	})
	if inst, _ := g.EC2.Instance(foreign); inst.State != "running" {
		t.Fatalf("foreign instance %s is %q, want it left running", foreign, inst.State)
	}
	if n := g.EC2.Calls("TerminateInstances"); n != 0 {
		t.Fatalf("%d TerminateInstances calls, want none", n)
	}
}

// TestE2E_ForgedInstanceAnnotationRefused: only Joist may set joist.sh/
// annotations on a pod (else anyone who can create a pod could have the
// binder bind it to any node, past the scheduler), and Joist may change
// nothing else on a pod.
func TestE2E_ForgedInstanceAnnotationRefused(t *testing.T) {
	g := testenv.NewGround(t, testenv.GroundOptions{Cluster: "forge", Namespace: "forge", NoForwarder: true})
	ctx := context.Background()
	admin := g.Kube.Client
	forged := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "forge", Annotations: map[string]string{pods.AnnotationInstance: "i-0123456789abcdef0"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		}
	}
	// The policy takes effect a moment after it is created.
	var err error
	eventually(t, 30*time.Second, "a pod with a forged joist.sh/instance-id refused", func() (bool, error) {
		_, err = admin.CoreV1().Pods("forge").Create(ctx, forged("forged"), metav1.CreateOptions{})
		if err == nil {
			_ = admin.CoreV1().Pods("forge").Delete(ctx, "forged", metav1.DeleteOptions{})
			return false, nil
		}
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), nil
	})
	if !strings.Contains(err.Error(), "only Joist may set") {
		t.Errorf("refusal %q does not say why", err)
	}
	// Added later by a user: refused too.
	plain := forged("plain")
	plain.Annotations = nil
	if _, err := admin.CoreV1().Pods("forge").Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"annotations":{"` + pods.AnnotationInstance + `":"i-0123456789abcdef0"}}}`)
	if _, err := admin.CoreV1().Pods("forge").Patch(ctx, "plain", types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
		t.Error("a user added joist.sh/instance-id to a pod")
	}
	// Joist's own identity may set it, and nothing else.
	kc, err := g.Kube.FunctionKubeconfig(iampolicy.Provisioner)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	joist := kubernetes.NewForConfigOrDie(cfg)
	if _, err := joist.CoreV1().Pods("forge").Patch(ctx, "plain", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("the provisioner could not plan a pod: %v", err)
	}
	relabel := []byte(`{"metadata":{"labels":{"app":"stolen"}}}`)
	if _, err := joist.CoreV1().Pods("forge").Patch(ctx, "plain", types.MergePatchType, relabel, metav1.PatchOptions{}); err == nil {
		t.Error("the provisioner changed a pod's labels")
	}
}
