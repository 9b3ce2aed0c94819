package apply

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// conditionPlan: migrate (one-shot), web waiting for it to start, api for
// it to complete, and cache with a consumer waiting for it to be healthy
// and one for it to be ready.
func conditionPlan(t *testing.T) *plan.Plan {
	desired, err := spec.Parse("plugins.yaml", []byte(`plugins:
  migrate: {command: [m], once: true}
  web: {command: [w], uses: [{plugin: migrate, until: started}]}
  api: {command: [a], uses: [{plugin: migrate, until: completed}]}
  cache: {command: [c], health: {tcp: "127.0.0.1:1"}}
  front: {command: [f], uses: [{plugin: cache, until: healthy}]}
  side: {command: [s], uses: [cache]}
`))
	require.NoError(t, err)
	p, err := plan.Diff(desired, nil)
	require.NoError(t, err)
	return p
}

// TestConditionsRelease: a step waiting for a provider to start begins
// once the provider's step reports started, while that step still runs;
// one waiting for completion begins only when the step ends; a provider
// that a step waits for to be healthy is asked to go that far, and its
// step's end is reported before that step begins; one that waits for it
// to be ready begins before it is healthy.
func TestConditionsRelease(t *testing.T) {
	p := conditionPlan(t)
	ex := newScript(0)
	release, sideBegan := make(chan struct{}), make(chan struct{})
	untils := map[string]spec.Condition{}
	ex.milestones = func(plugin string, until spec.Condition, reached func(spec.Condition)) {
		ex.mu.Lock()
		untils[plugin] = until
		ex.mu.Unlock()
		reached(spec.UntilStarted)
		reached(spec.UntilReady)
		if plugin == "migrate" {
			<-release // migrate runs until web has begun
		}
		if plugin == "cache" {
			select { // cache is healthy only once side has begun
			case <-sideBegan:
			case <-time.After(10 * time.Second):
				t.Error("side, waiting for cache to be ready, did not begin before cache was healthy")
			}
		}
		if until == spec.UntilHealthy {
			reached(spec.UntilHealthy)
			time.Sleep(20 * time.Millisecond) // a moment passes before the step returns
		}
	}
	var events []Event
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), p, ex, Options{Events: func(e Event) {
			events = append(events, e)
			if e.Step.ID == "start:web" && e.Phase == Began {
				close(release)
			}
			if e.Step.ID == "start:side" && e.Phase == Began {
				close(sideBegan)
			}
		}})
	}()
	require.NoError(t, <-done, "web began while migrate ran; else this never ends")
	at := func(id string, ph Phase) int {
		for i, e := range events {
			if e.Step.ID == id && e.Phase == ph {
				return i
			}
		}
		t.Fatalf("no %s %s", id, ph)
		return -1
	}
	assert.Greater(t, at("start:api", Began), at("start:migrate", Succeeded), "api waits for migrate to complete")
	assert.Less(t, at("start:web", Began), at("start:migrate", Succeeded), "web waits only for migrate to start")
	assert.Equal(t, spec.UntilHealthy, untils["cache"], "front waits for cache to be healthy")
	assert.Greater(t, at("start:front", Began), at("start:cache", Succeeded),
		"the step that goes as far as healthy is reported done before front, which waits for that, begins")
	assert.Empty(t, untils["migrate"], "nothing waits beyond a one-shot's own end")
}

// TestConditionsFailedProvider: when a provider's step fails, the steps
// still waiting on it are skipped, and those it released already ran.
func TestConditionsFailedProvider(t *testing.T) {
	p := conditionPlan(t)
	ex := newScript(0, "start:migrate")
	ex.milestones = func(plugin string, _ spec.Condition, reached func(spec.Condition)) {
		reached(spec.UntilStarted)
	}
	var skipped []string
	err := Run(context.Background(), p, ex, Options{Events: func(e Event) {
		if e.Phase == Skipped {
			skipped = append(skipped, e.Step.ID)
		}
	}})
	require.Error(t, err)
	assert.Equal(t, []string{"start:api"}, skipped)
	assert.Contains(t, ex.ended, "start:web", "web waited only for migrate to start")
}
