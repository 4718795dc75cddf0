package claude

import (
	"os"
	"testing"

	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
)

func TestMain(m *testing.M) {
	fakecli.RunIfRequested()
	os.Exit(m.Run())
}
