package stack

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// cfnLint finds the cfn-lint program (the pip package, 1.x): on PATH, or
// in pyenv's shims, where pip puts it on machines whose PATH lacks them.
func cfnLint() (string, error) {
	if p, err := exec.LookPath("cfn-lint"); err == nil {
		return p, nil
	}
	for _, root := range []string{os.Getenv("PYENV_ROOT"), filepath.Join(os.Getenv("HOME"), ".pyenv")} {
		if root == "" {
			continue
		}
		if p := filepath.Join(root, "shims", "cfn-lint"); isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New("cfn-lint not found: pip install cfn-lint (or JOIST_NO_CFN_LINT=1 to go without the template lint)")
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// TestTemplatePassesCfnLint runs cfn-lint over the synthesized template of
// the default configuration and of one with every option on: an error
// (a property CloudFormation would refuse, a bad reference, a value out of
// range) fails; warnings are shown. Without cfn-lint the test fails,
// unless JOIST_NO_CFN_LINT=1 says the machine cannot have it (.ci/run sets
// it, loudly, only when installing it failed).
func TestTemplatePassesCfnLint(t *testing.T) {
	bin, err := cfnLint()
	if err != nil {
		if os.Getenv("JOIST_NO_CFN_LINT") == "1" {
			t.Skipf("%v; JOIST_NO_CFN_LINT=1", err)
		}
		t.Fatal(err)
	}
	everything := baseConfig(placeholderAssets(t))
	everything.SpecSource = SpecSourceCRD
	everything.ForwarderImage = "123456789012.dkr.ecr.ap-northeast-2.amazonaws.com/joist-forwarder:v1"
	everything.AlarmTopicArn = "arn:aws:sns:ap-northeast-2:123456789012:ops"
	everything.ClusterEndpoint = "https://ABCDEF.gr7.ap-northeast-2.eks.amazonaws.com"
	everything.ClusterCA = "Y2E="
	everything.AccessEntries = false
	everything.VpcID = "vpc-0123456789abcdef0"
	everything.SubnetIDs = []string{"subnet-0123456789abcdef0", "subnet-0123456789abcdef1"}
	everything.ClusterSecurityGroupID = "sg-0123456789abcdef0"
	everything.VpcEndpoints = true
	everything.Teardown = true
	for name, cfg := range map[string]Config{
		"defaults":   baseConfig(placeholderAssets(t)),
		"everything": everything,
	} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
			if _, err := New(app, "JoistStack", cfg); err != nil {
				t.Fatal(err)
			}
			app.Synth(nil)
			tpl := filepath.Join(out, "JoistStack.template.json")
			cmd := exec.Command(bin, "--format", "parseable", tpl)
			report, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			switch {
			case err == nil:
			case errors.As(err, &exit):
				// cfn-lint's exit code is a bit mask: 2 errors,
				// 4 warnings, 8 informational.
				if exit.ExitCode()&2 != 0 || exit.ExitCode()&1 != 0 {
					t.Errorf("cfn-lint %s: exit %d:\n%s", tpl, exit.ExitCode(), report)
					return
				}
			default:
				t.Fatalf("cfn-lint: %v", err)
			}
			if s := strings.TrimSpace(string(report)); s != "" {
				t.Logf("cfn-lint warnings:\n%s", s)
			}
		})
	}
}
