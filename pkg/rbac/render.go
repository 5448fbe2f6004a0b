package rbac

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// ClusterPlaceholder stands for the cluster's name in the rendered file
// (filled in with envsubst, as infra/k8s/forwarder.yaml is).
const ClusterPlaceholder = "${CLUSTER_NAME}"

const fileHeader = `# What Joist's Lambda functions may do in the cluster. GENERATED from
# pkg/rbac (go test ./pkg/rbac -run TestRenderedFile -update): edit there.
#
# Each function reaches the API server with tokens signed by its own IAM
# role; its EKS access entry makes it the user joist:<function> in the group
# joist-<function> (the stack creates them; see docs/deploy.md). Each group
# is bound to a ClusterRole with only the verbs that function's code uses,
# the deciders may take only the cluster's Lease in kube-system, and a
# ValidatingAdmissionPolicy lets only Joist set joist.sh/ annotations on
# pods, and Joist change nothing else on them.
#
# cdk deploy installs these objects (the stack's installer, pkg/install);
# this file is for review, or for a cluster run without the stack:
#
#   envsubst '$CLUSTER_NAME' < infra/k8s/rbac.yaml | kubectl apply -f -
#
# With default topology spread constraints (-c schedulerConfig, i.e.
# JOIST_SCHEDULER_CONFIG) the provisioner, reaper and interruption roles
# also need: list services; get replicationcontrollers; get replicasets
# and statefulsets (apps). The stack's installer adds them then.
`

// Render is the file infra/k8s/rbac.yaml: the functions' RBAC objects for
// ClusterPlaceholder and the pod admission policy.
func Render() ([]byte, error) {
	objs, err := Objects(ClusterPlaceholder, DefaultLeaseNamespace)
	if err != nil {
		return nil, err
	}
	objs = append(objs, AdmissionObjects()...)
	var b bytes.Buffer
	b.WriteString(fileHeader)
	for _, o := range objs {
		y, err := marshal(o)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}

// marshal is YAML without the empty creationTimestamp of typed objects.
func marshal(o runtime.Object) ([]byte, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, fmt.Errorf("render %T: %w", o, err)
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return yaml.Marshal(m)
}
