package stack

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// TestAwsSolutionsChecks runs cdk-nag's AwsSolutions pack over the stack:
// no error and no warning is left unexplained (each suppression sits next
// to its resource with its reason, in nag.go).
func TestAwsSolutionsChecks(t *testing.T) {
	inVPC := baseConfig(placeholderAssets(t))
	inVPC.VpcID, inVPC.SubnetIDs = "vpc-0123456789abcdef0", []string{"subnet-0123456789abcdef0"}
	inVPC.ClusterSecurityGroupID, inVPC.VpcEndpoints = "sg-0123456789abcdef0", true
	inVPC.Teardown = true
	for name, cfg := range map[string]Config{"defaults": baseConfig(placeholderAssets(t)), "vpc and teardown": inVPC} {
		t.Run(name, func(t *testing.T) { awsSolutionsChecks(t, cfg) })
	}
}

func awsSolutionsChecks(t *testing.T, cfg Config) {
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	st, err := New(app, "JoistStack", cfg)
	if err != nil {
		t.Fatal(err)
	}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	app.Synth(nil)
	ann := assertions.Annotations_FromStack(st.Stack)
	var found []string
	for _, list := range []*[]*cxapi.SynthesisMessage{
		ann.FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))),
		ann.FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))),
	} {
		for _, m := range *list {
			found = append(found, fmt.Sprintf("%s: %v", *m.Id, m.Entry.Data))
		}
	}
	sort.Strings(found)
	if len(found) > 0 {
		if os.Getenv("JOIST_NAG_VERBOSE") != "" {
			t.Logf("%s", strings.Join(found, "\n"))
		}
		t.Errorf("cdk-nag AwsSolutions: %d findings:\n%s", len(found), strings.Join(found, "\n"))
	}
}
