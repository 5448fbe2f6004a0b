// Package kubeletsim plays the kubelets of the instances Joist launches,
// since the test ground has no real machines: for every running instance
// tagged for the cluster it registers a Node the way an EKS node does
// (name from the private DNS name, providerID aws:///<zone>/<id>, the
// labels and taints its user data asks for, capacity and allocatable from
// the catalog; a Windows instance as a Windows kubelet registers, with
// kubernetes.io/os=windows and its build), marks it Ready after a delay,
// marks pods bound to it
// Running, removes pods being deleted (evicted) from it at once, and
// deletes the Node when the instance is gone (as the cloud node lifecycle
// controller does; a finalizer may hold it).
package kubeletsim

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/model"
)

// TagCluster is the tag the simulator finds the cluster's instances by.
const TagCluster = "joist.sh/cluster"

// Sim is the kubelet simulator.
type Sim struct {
	Kube    kubernetes.Interface
	EC2     *ec2.Client
	Cluster string
	Region  string
	// ReadyDelay is how long a registered node stays NotReady.
	ReadyDelay time.Duration
	// Interval is how often the simulator looks (default 100ms).
	Interval time.Duration
	// Skip, when set, names instances that must never register (a node
	// that fails to join).
	Skip func(instanceID string) bool
	Log  *slog.Logger
	// OnEvent, when set, hears "registered" and "ready" per node.
	OnEvent func(what, node, instanceID string)
	// KeepGone leaves the nodes of instances that stopped running (by
	// default the simulator deletes them at once, playing the cloud
	// controller's node lifecycle; in EKS that takes a while), so a test
	// sees who else deletes them.
	KeepGone bool

	mu         sync.Mutex
	registered map[string]time.Time // node name → registration time
	// instanceOf is the instance each registered name belongs to: EC2
	// reuses private addresses, so a new instance may get the name of a
	// node that was deleted (drained) while its kubelet was not looking.
	instanceOf map[string]string
}

// Run simulates until ctx ends.
func (s *Sim) Run(ctx context.Context) {
	if s.Interval == 0 {
		s.Interval = 100 * time.Millisecond
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		if err := s.Step(ctx); err != nil && ctx.Err() == nil {
			s.Log.Warn("kubelet sim step", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step does one round: register, mark ready, run pods, remove the gone.
func (s *Sim) Step(ctx context.Context) error {
	s.mu.Lock()
	if s.registered == nil {
		s.registered = map[string]time.Time{}
		s.instanceOf = map[string]string{}
	}
	s.mu.Unlock()
	out, err := s.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + TagCluster), Values: []string{s.Cluster}},
	}})
	if err != nil {
		return fmt.Errorf("describe instances: %w", err)
	}
	running := map[string]bool{}
	for _, r := range out.Reservations {
		for _, inst := range r.Instances {
			if inst.State == nil || inst.State.Name != ec2types.InstanceStateNameRunning {
				continue
			}
			id := aws.ToString(inst.InstanceId)
			if s.Skip != nil && s.Skip(id) {
				continue
			}
			name := aws.ToString(inst.PrivateDnsName)
			running[name] = true
			if err := s.ensureNode(ctx, inst); err != nil {
				s.Log.Warn("kubelet sim: register", "instance", id, "error", err)
			}
		}
	}
	// A name is registered only while its instance runs: EC2 gives a
	// terminated instance's address (and so its name) to a later
	// instance, whose node must be registered anew even when the old node
	// went (released by Joist) before this loop saw it go.
	s.mu.Lock()
	for name := range s.registered {
		if !running[name] {
			delete(s.registered, name)
		}
	}
	s.mu.Unlock()
	nodes, err := s.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Labels["joist.sh/simulated"] != "true" {
			continue
		}
		if !running[n.Name] {
			if s.KeepGone {
				continue
			}
			_ = s.Kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
			s.mu.Lock()
			delete(s.registered, n.Name)
			s.mu.Unlock()
			continue
		}
		if err := s.maybeReady(ctx, n); err != nil {
			s.Log.Warn("kubelet sim: ready", "node", n.Name, "error", err)
		}
		if err := s.runPods(ctx, n.Name); err != nil {
			s.Log.Warn("kubelet sim: pods", "node", n.Name, "error", err)
		}
	}
	return nil
}

func (s *Sim) ensureNode(ctx context.Context, inst ec2types.Instance) error {
	name, id := aws.ToString(inst.PrivateDnsName), aws.ToString(inst.InstanceId)
	s.mu.Lock()
	_, done := s.registered[name]
	done = done && s.instanceOf[name] == id
	s.mu.Unlock()
	if done {
		return nil
	}
	if n, err := s.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil && strings.HasSuffix(n.Spec.ProviderID, "/"+id) {
		s.mu.Lock()
		s.registered[name] = time.Now()
		s.instanceOf[name] = id
		s.mu.Unlock()
		return nil
	}
	reg, err := s.registration(ctx, inst)
	if err != nil {
		return err
	}
	it, ok := catalog.Lookup(string(inst.InstanceType))
	if !ok {
		return fmt.Errorf("instance type %s not in the catalog", inst.InstanceType)
	}
	var k *model.Kubelet
	if reg.MaxPods > 0 {
		mp := int32(reg.MaxPods)
		k = &model.Kubelet{MaxPods: &mp}
	}
	// A Windows kubelet reports its OS and build; the node is sized as
	// a Windows one (110 pods, private IPv4 addresses). Every kubelet
	// reports the ephemeral storage of the volume its root directory is
	// on: the family's ephemeral device as the launch template maps it.
	nc := &model.NodeClass{AMIFamily: reg.Format, BlockDeviceMappings: reg.Volumes}
	if reg.Format == "Windows" {
		w, err := s.windowsServer(ctx, inst)
		if err != nil {
			return err
		}
		nc.AMIFamily = w.Family
	}
	zone := aws.ToString(inst.Placement.AvailabilityZone)
	labels := map[string]string{}
	for key, v := range reg.Labels {
		labels[key] = v
	}
	for key, v := range it.LabelsFor(nc) {
		if key == corev1.LabelInstanceTypeStable || key == corev1.LabelArchStable || key == corev1.LabelOSStable || key == corev1.LabelWindowsBuild {
			labels[key] = v
		}
	}
	labels[corev1.LabelHostname] = name
	labels[corev1.LabelTopologyZone] = zone
	if id := aws.ToString(inst.Placement.AvailabilityZoneId); id != "" {
		// As the AWS cloud controller manager labels EKS's nodes.
		labels["topology.k8s.aws/zone-id"] = id
	}
	labels[corev1.LabelTopologyRegion] = s.Region
	labels["joist.sh/simulated"] = "true"
	taints := append([]corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}, reg.Taints...)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///%s/%s", zone, aws.ToString(inst.InstanceId)), Taints: taints},
	}
	created, err := s.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	created.Status = corev1.NodeStatus{
		Capacity:    it.CapacityFor(k, nc),
		Allocatable: it.AllocatableFor(k, nc),
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: aws.ToString(inst.PrivateIpAddress)}},
	}
	if _, err := s.Kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s status: %w", name, err)
	}
	s.mu.Lock()
	s.registered[name] = time.Now()
	s.instanceOf[name] = id
	s.mu.Unlock()
	s.Log.Info("kubelet sim: node registered", "node", name, "instance", aws.ToString(inst.InstanceId))
	if s.OnEvent != nil {
		s.OnEvent("registered", name, aws.ToString(inst.InstanceId))
	}
	return nil
}

// windowsImage reads the Windows Server version of an EKS optimized
// Windows AMI's name (Windows_Server-2022-English-Core-EKS_Optimized-1.32).
var windowsImage = regexp.MustCompile(`^Windows_Server-(\d{4})-`)

// windowsServer is the Windows Server the instance boots, as its kubelet
// would know it: read from its image's name.
func (s *Sim) windowsServer(ctx context.Context, inst ec2types.Instance) (model.WindowsServer, error) {
	id := aws.ToString(inst.ImageId)
	out, err := s.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{id}})
	if err != nil {
		return model.WindowsServer{}, fmt.Errorf("image %s of Windows instance %s: %w", id, aws.ToString(inst.InstanceId), err)
	}
	if len(out.Images) == 1 {
		name := aws.ToString(out.Images[0].Name)
		if m := windowsImage.FindStringSubmatch(name); m != nil {
			if w, ok := model.WindowsServerOf("Windows" + m[1]); ok {
				return w, nil
			}
		}
		return model.WindowsServer{}, fmt.Errorf("instance %s has Windows user data but boots %s (%q), not an EKS optimized Windows Server 2019, 2022 or 2025 image", aws.ToString(inst.InstanceId), id, name)
	}
	return model.WindowsServer{}, fmt.Errorf("instance %s has Windows user data but its image %s is not known", aws.ToString(inst.InstanceId), id)
}

// registration reads the labels and taints the instance's user data asks
// for, from its launch template.
func (s *Sim) registration(ctx context.Context, inst ec2types.Instance) (*Registration, error) {
	var ltID string
	for _, t := range inst.Tags {
		if aws.ToString(t.Key) == "aws:ec2launchtemplate:id" {
			ltID = aws.ToString(t.Value)
		}
	}
	if ltID == "" {
		return nil, fmt.Errorf("instance %s has no launch template", aws.ToString(inst.InstanceId))
	}
	out, err := s.EC2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
		LaunchTemplateId: aws.String(ltID), Versions: []string{"$Latest"},
	})
	if err != nil {
		return nil, fmt.Errorf("launch template %s: %w", ltID, err)
	}
	if len(out.LaunchTemplateVersions) == 0 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil {
		return nil, fmt.Errorf("launch template %s has no data", ltID)
	}
	data := out.LaunchTemplateVersions[0].LaunchTemplateData
	reg, err := ParseUserData(aws.ToString(data.UserData))
	if err != nil {
		return nil, err
	}
	for _, b := range data.BlockDeviceMappings {
		if b.Ebs == nil || b.Ebs.VolumeSize == nil {
			continue
		}
		reg.Volumes = append(reg.Volumes, model.BlockDeviceMapping{
			DeviceName: aws.ToString(b.DeviceName), EBS: &model.EBS{VolumeSize: fmt.Sprintf("%dGi", *b.Ebs.VolumeSize)},
		})
	}
	return reg, nil
}

func (s *Sim) maybeReady(ctx context.Context, n *corev1.Node) error {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return nil
		}
	}
	s.mu.Lock()
	at, ok := s.registered[n.Name]
	s.mu.Unlock()
	if !ok {
		at = n.CreationTimestamp.Time
	}
	if time.Since(at) < s.ReadyDelay {
		return nil
	}
	// Ready: the status first, then the not-ready taint goes, as the node
	// lifecycle controller would do.
	n = n.DeepCopy()
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionTrue
			n.Status.Conditions[i].Reason = "KubeletReady"
			n.Status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	updated, err := s.Kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	var keep []corev1.Taint
	for _, t := range updated.Spec.Taints {
		if t.Key != corev1.TaintNodeNotReady {
			keep = append(keep, t)
		}
	}
	updated.Spec.Taints = keep
	if _, err := s.Kube.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return err
	}
	s.Log.Info("kubelet sim: node ready", "node", n.Name)
	if s.OnEvent != nil {
		s.OnEvent("ready", n.Name, "")
	}
	return nil
}

func (s *Sim) runPods(ctx context.Context, node string) error {
	list, err := s.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		return err
	}
	zero := int64(0)
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil {
			// Evicted or deleted: the containers stop at once and the
			// kubelet removes the pod, as a real kubelet does after the
			// grace period.
			if err := s.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
				GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID},
			}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
			continue
		}
		if p.Status.Phase == corev1.PodRunning {
			continue
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.StartTime = &now
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		if _, err := s.Kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
