package stack

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/jsii-runtime-go"

	"github.com/joist-dev/joist/pkg/specs"
)

// SpecParameters reads the specs in dir (its .yaml, .yml and .json files)
// and validates them as the functions will: any problem stops the synth
// with the validator's own message, naming the object and the field. It
// returns each object's parameter name and document.
func SpecParameters(cluster, dir string) (map[string]string, error) {
	objs, problems := specs.ReadFiles([]string{dir}, false, nil)
	_, errs := specs.Build(objs)
	problems = append(problems, errs...)
	if len(problems) > 0 {
		return nil, fmt.Errorf("context %s=%s: the specs do not validate:\n  %s", CtxSpecs, dir, strings.Join(specs.ProblemLines(problems), "\n  "))
	}
	out := map[string]string{}
	for _, o := range objs {
		if o.Ignored {
			continue
		}
		name := specs.ParameterName(cluster, o.Kind, o.Name)
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("context %s=%s: %s %q is given twice", CtxSpecs, dir, o.Kind, o.Name)
		}
		doc, err := o.Document()
		if err != nil {
			return nil, err
		}
		out[name] = doc
	}
	if len(out) == 0 {
		return nil, errors.New("context " + CtxSpecs + "=" + dir + ": no Provisioner, AWSNodeTemplate, NodePool or EC2NodeClass in it")
	}
	return out, nil
}

// defineSpecs stores the specs of -c specs=DIR as the cluster's SSM
// parameters: a stack update rewrites them, a stack delete removes them.
// Parameters pushed by `joist specs push` beside them are left alone.
func (s *JoistStack) defineSpecs(params map[string]string) {
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		// The construct id follows the parameter's name, so adding or
		// removing a spec never renames (and so replaces) another's.
		sum := sha256.Sum256([]byte(n))
		awsssm.NewStringParameter(s.Stack, jsii.String("Spec"+hex.EncodeToString(sum[:8])), &awsssm.StringParameterProps{
			ParameterName: jsii.String(n),
			StringValue:   jsii.String(params[n]),
			Description:   jsii.String("Joist spec (from -c " + CtxSpecs + ")"),
			// Standard parameters hold 4 KB; larger specs need the
			// advanced tier, which Intelligent-Tiering picks alone.
			Tier: awsssm.ParameterTier_INTELLIGENT_TIERING,
		})
	}
}
