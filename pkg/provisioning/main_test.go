package provisioning

import (
	"testing"

	"github.com/joist-dev/joist/test/testenv"
)

// TestMain stops the API server the tests that bind start (testenv.Kube).
func TestMain(m *testing.M) { testenv.Main(m) }
