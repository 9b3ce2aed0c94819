//go:build linux

package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/graftland/graft/hostapi"
)

// metrics [-url URL [-token FILE]] SERIES OP [VALUE] waits, at most 10
// seconds, until a series of the metrics has a value: those of the host
// of .graft, through its socket, or those URL serves (with FILE's token).
// SERIES is name{label="value",...} with every label of the series, in
// any order; a histogram's name_count and name_sum are its count and sum.
// OP is ==, >= or <= VALUE, or absent. The text is read with Prometheus's
// own parser, so what it cannot parse fails the script.
func cmdMetrics(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	url := fs.String("url", "", "")
	tokenFile := fs.String("token", "", "")
	if neg || fs.Parse(args) != nil || fs.NArg() < 2 || fs.NArg() > 3 {
		ts.Fatalf("usage: metrics [-url URL [-token FILE]] SERIES ==|>=|<=|absent [VALUE]")
	}
	name, labels := parseSeries(ts, fs.Arg(0))
	op, want := fs.Arg(1), 0.0
	if op != "absent" {
		var err error
		want, err = strconv.ParseFloat(fs.Arg(2), 64)
		ts.Check(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		fams := scrape(ts, *url, *tokenFile)
		got, found := seriesValue(fams, name, labels)
		if holds(op, found, got, want) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s: found %v, value %v; want %s %v", fs.Arg(0), found, got, op, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func holds(op string, found bool, got, want float64) bool {
	switch op {
	case "absent":
		return !found
	case "==":
		return found && got == want
	case ">=":
		return found && got >= want
	case "<=":
		return found && got <= want
	}
	panic("metrics: unknown op " + op)
}

// parseSeries reads name{k="v",...}; values hold no comma.
func parseSeries(ts *testscript.TestScript, s string) (string, map[string]string) {
	name, rest, ok := strings.Cut(s, "{")
	labels := map[string]string{}
	if !ok {
		return name, labels
	}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
		k, v, ok := strings.Cut(kv, "=")
		uq, err := strconv.Unquote(v)
		if !ok || err != nil {
			ts.Fatalf("metrics: bad label %q in %s", kv, s)
		}
		labels[k] = uq
	}
	return name, labels
}

// scrape reads the metrics, parsed by Prometheus's text parser.
func scrape(ts *testscript.TestScript, url, tokenFile string) map[string]*dto.MetricFamily {
	var text []byte
	if url == "" {
		c, err := hostapi.NewClient(ts.MkAbs(".graft"))
		ts.Check(err)
		defer c.Close()
		text, err = c.Metrics(context.Background())
		ts.Check(err)
	} else {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		ts.Check(err)
		if tokenFile != "" {
			token, err := os.ReadFile(ts.MkAbs(tokenFile))
			ts.Check(err)
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		}
		resp, err := http.DefaultClient.Do(req)
		ts.Check(err)
		defer resp.Body.Close()
		if text, err = io.ReadAll(resp.Body); err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s: %s", url, resp.Status, text)
		}
		ts.Check(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		ts.Fatalf("metrics: %v in:\n%s", err, text)
	}
	return fams
}

// seriesValue is the value of the series of name with exactly labels.
func seriesValue(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	part := ""
	fam := fams[name]
	for _, suffix := range []string{"_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); fam == nil && ok && fams[base] != nil {
			fam, part = fams[base], suffix
		}
	}
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.GetMetric() {
		if !sameLabels(m.GetLabel(), labels) {
			continue
		}
		switch {
		case part == "_count":
			return float64(m.GetHistogram().GetSampleCount()), true
		case part == "_sum":
			return m.GetHistogram().GetSampleSum(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		}
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

func sameLabels(got []*dto.LabelPair, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, l := range got {
		if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
			return false
		}
	}
	return true
}
