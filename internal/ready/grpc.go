package ready

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/graftland/graft/launch"
)

// The grpc probe (docs/semantics.md, "Health checks"): one call of the
// standard health service, grpc.health.v1 Health/Check, in plain text.

// checkGRPC passes when p.GRPC's health service answers SERVING for
// p.Service ("" asks after the server as a whole). Each attempt has a
// connection of its own, closed before it returns, so that a check run
// every interval leaves no connection, nor its goroutines, behind.
func checkGRPC(ctx context.Context, p launch.Probe, _ Exec) error {
	what := "grpc health " + p.GRPC
	if p.Service != "" {
		what += fmt.Sprintf(" service %q", p.Service)
	}
	// passthrough: the address is dialled as it is written, as a tcp
	// probe's is, with no resolver of gRPC's own; and no proxy, as for
	// an http probe.
	conn, err := grpc.NewClient("passthrough:///"+p.GRPC,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithNoProxy())
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: p.Service})
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, ctx.Err())
	case err != nil:
		s := status.Convert(err)
		return fmt.Errorf("%s: %s: %s", what, s.Code(), s.Message())
	case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		return fmt.Errorf("%s: %s", what, resp.GetStatus())
	}
	return nil
}
