// Package specs reads Karpenter's spec APIs unchanged and turns them into
// Joist's internal model (pkg/model).
//
// The pipeline is Decode (split multi-document YAML or JSON and classify
// each document), then Build (strict-decode each object, default it as
// Karpenter's webhooks and CRD schemas did, validate it with every rule
// they enforced, resolve pool → node class references, and map onto
// model.Spec). Convert rewrites v1alpha5/v1alpha1 objects as v1 ones.
//
// The package is pure: no AWS SDK, no Kubernetes client, no clock.
package specs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/pkg/apis"
	"github.com/joist-dev/joist/pkg/apis/v1"
	"github.com/joist-dev/joist/pkg/apis/v1alpha1"
	"github.com/joist-dev/joist/pkg/apis/v1alpha5"
	"github.com/joist-dev/joist/pkg/apis/v1beta1"
)

// Kinds Joist reads, as Object.Kind spells them.
const (
	KindProvisioner     = v1alpha5.Kind
	KindAWSNodeTemplate = v1alpha1.Kind
	KindNodePool        = v1.KindNodePool
	KindEC2NodeClass    = v1.KindEC2NodeClass
	KindNodeOverlay     = v1alpha1.KindNodeOverlay
)

// supportedKinds maps apiVersion and kind to the kinds Joist reads.
var supportedKinds = map[string]string{
	v1alpha5.APIVersion + "/" + v1alpha5.Kind:                       KindProvisioner,
	v1alpha1.APIVersion + "/" + v1alpha1.Kind:                       KindAWSNodeTemplate,
	v1.APIVersionNodePool + "/" + v1.KindNodePool:                   KindNodePool,
	v1.APIVersionNodeClass + "/" + v1.KindEC2NodeClass:              KindEC2NodeClass,
	v1alpha1.APIVersionNodeOverlay + "/" + v1alpha1.KindNodeOverlay: KindNodeOverlay,
	// v1beta1 (Karpenter v0.32–v0.37) is read as the v1 it converts to
	// (v1beta1.go).
	v1beta1.APIVersionNodePool + "/" + v1beta1.KindNodePool:      KindNodePool,
	v1beta1.APIVersionNodeClass + "/" + v1beta1.KindEC2NodeClass: KindEC2NodeClass,
}

const supportedList = "karpenter.sh/v1alpha5 Provisioner, karpenter.k8s.aws/v1alpha1 AWSNodeTemplate, karpenter.sh/v1beta1 and v1 NodePool, karpenter.k8s.aws/v1beta1 and v1 EC2NodeClass, karpenter.sh/v1alpha1 NodeOverlay"

// Object is one document read by Decode. Objects of the spec kinds
// are built by Build; any other Kubernetes object (a Deployment in a
// mixed manifest, say) is returned with Ignored set, so that callers such
// as `joist plan` can pick up workloads from the same files.
type Object struct {
	// Source names where the object was read from: a file path, an SSM
	// parameter name, or "crd".
	Source string
	// Index is the object's position among the objects of Source
	// (0-based; items of a List count one each).
	Index      int
	APIVersion string
	Kind       string
	Name       string
	// Raw is the object as JSON.
	Raw []byte
	// Ignored is true for objects that are not of a spec kind.
	Ignored bool

	// problem is a document-level defect Decode tolerated (duplicate YAML
	// keys) that Build reports against the object.
	problem error
}

// String names the object for messages: `Provisioner "service"`.
func (o Object) String() string { return fmt.Sprintf("%s %q", o.Kind, o.Name) }

// Where says where the object came from: `seed.yaml (object 3)`.
func (o Object) Where() string {
	if o.Source == "" {
		return fmt.Sprintf("object %d", o.Index+1)
	}
	return fmt.Sprintf("%s (object %d)", o.Source, o.Index+1)
}

// Decode splits data into objects. data is multi-document YAML, or JSON
// (one object, several concatenated, or an array); a document whose kind
// is List (or ends in List, as `kubectl get -o yaml` prints) is expanded
// into its items. Documents of the Karpenter groups whose version or kind
// Joist does not read, and documents without apiVersion or kind, are
// errors naming the source and object; documents of any other group are
// returned as ignored objects. Decode returns every object it could read
// together with the error for those it could not; both may be non-nil.
func Decode(data []byte, source string) ([]Object, error) {
	docs, err := splitDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var (
		objs []Object
		errs []error
	)
	add := func(raw []byte, problem error) {
		idx := len(objs) + len(errs)
		obj, err := classify(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: object %d: %w", source, idx+1, err))
			return
		}
		obj.Source, obj.Index, obj.problem = source, idx, problem
		objs = append(objs, obj)
	}
	for _, d := range docs {
		if d.err != nil && d.raw == nil {
			errs = append(errs, fmt.Errorf("%s: object %d: %w", source, len(objs)+len(errs)+1, d.err))
			continue
		}
		items, isList, err := listItems(d.raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: object %d: %w", source, len(objs)+len(errs)+1, err))
			continue
		}
		if !isList {
			add(d.raw, d.err)
			continue
		}
		for _, it := range items {
			add(it, d.err)
		}
	}
	return objs, errors.Join(errs...)
}

type document struct {
	raw []byte // JSON
	err error  // a problem; with raw == nil the document is unusable
}

// splitDocuments turns YAML or JSON input into JSON documents, dropping
// empty ones (comments only, or a bare ---).
func splitDocuments(data []byte) ([]document, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		return splitJSON(trimmed)
	}
	var docs []document
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		chunk, err := r.Read()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return docs, fmt.Errorf("read YAML: %w", err)
		}
		raw, err := yaml.YAMLToJSONStrict(chunk)
		var problem error
		if err != nil {
			// Duplicate keys fail the strict conversion only; keep the
			// document (last key wins, as kubectl's lenient mode does)
			// and report the duplicate against the object.
			lenient, lerr := yaml.YAMLToJSON(chunk)
			if lerr != nil {
				docs = append(docs, document{err: fmt.Errorf("invalid YAML: %w", lerr)})
				continue
			}
			raw, problem = lenient, fmt.Errorf("invalid YAML: %w", err)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		docs = append(docs, document{raw: raw, err: problem})
	}
}

func splitJSON(data []byte) ([]document, error) {
	var docs []document
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return docs, fmt.Errorf("invalid JSON: %w", err)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '[' {
			var arr []json.RawMessage
			if err := json.Unmarshal(raw, &arr); err != nil {
				return docs, fmt.Errorf("invalid JSON: %w", err)
			}
			for _, it := range arr {
				docs = append(docs, document{raw: it})
			}
			continue
		}
		docs = append(docs, document{raw: raw})
	}
}

// header is the part of every object Decode looks at.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

func listItems(raw []byte) ([][]byte, bool, error) {
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, false, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if h.Kind != "List" && !(strings.HasSuffix(h.Kind, "List") && isKarpenterGroup(h.APIVersion)) {
		return nil, false, nil
	}
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, true, fmt.Errorf("read %s items: %w", h.Kind, err)
	}
	items := make([][]byte, 0, len(l.Items))
	for _, it := range l.Items {
		items = append(items, it)
	}
	return items, true, nil
}

func isKarpenterGroup(apiVersion string) bool {
	group, _, _ := strings.Cut(apiVersion, "/")
	return group == apis.GroupCore || group == apis.GroupAWS
}

func classify(raw []byte) (Object, error) {
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		return Object{}, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if h.APIVersion == "" || h.Kind == "" {
		return Object{}, fmt.Errorf("missing apiVersion or kind (Joist reads %s)", supportedList)
	}
	obj := Object{APIVersion: h.APIVersion, Kind: h.Kind, Name: h.Metadata.Name, Raw: raw}
	if _, ok := supportedKinds[h.APIVersion+"/"+h.Kind]; ok {
		return obj, nil
	}
	if isKarpenterGroup(h.APIVersion) {
		return Object{}, fmt.Errorf("%s %s %q is not supported: Joist reads %s", h.APIVersion, h.Kind, h.Metadata.Name, supportedList)
	}
	obj.Ignored = true
	return obj, nil
}
