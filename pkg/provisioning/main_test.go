package provisioning

import (
	"context"
	"testing"

	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"

	"github.com/joist-dev/joist/test/testenv"
)

// TestMain stops the API server the tests that bind start (testenv.Kube).
func TestMain(m *testing.M) { testenv.Main(m) }

// noReservations is a test launcher's answer when no node class selects
// a capacity reservation.
type noReservations struct{}

func (noReservations) Reservations(context.Context, *model.NodeClass) ([]launch.Reservation, error) {
	return nil, nil
}
