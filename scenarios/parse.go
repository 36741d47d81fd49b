package scenarios

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/scenarios/yamlstrict"
)

// ErrInvalidScenario is matched by errors.Is for every error about a
// scenario's content: it is yamlstrict.ErrInvalid, which the sample API's
// configuration errors share.
var ErrInvalidScenario = yamlstrict.ErrInvalid

// ScenarioError is a fault in a scenario file: where it is and what is
// wrong, formatted "FILE:LINE: FIELD: message". It is yamlstrict.Error, the
// one positioned error type of rlbench's YAML files: Line is 1-based and 0
// when unknown; Field is the key's path, such as "traffic[2].rate", and
// empty when the fault is not one field's; Unwrap gives the cause.
// errors.Is(err, ErrInvalidScenario) holds for every ScenarioError.
type ScenarioError = yamlstrict.Error

// The raw types mirror the file; every key a file may hold is a yaml tag here,
// which is also the list unknown keys are matched against.

type rawScenario struct {
	Name        string        `yaml:"name"`
	Description string        `yaml:"description"`
	Seed        *int64        `yaml:"seed"`
	Redis       rawRedis      `yaml:"redis"`
	Target      rawTarget     `yaml:"target"`
	Identities  rawIdentities `yaml:"identities"`
	Traffic     []rawPhase    `yaml:"traffic"`
	Checks      rawChecks     `yaml:"checks"`
	Faults      []rawFault    `yaml:"faults"`
	Shards      *rawShards    `yaml:"shards"`
}

type rawShards struct {
	Count  *int     `yaml:"count"`
	Spread []string `yaml:"spread"`
}

type rawFault struct {
	Kind     string `yaml:"kind"`
	At       string `yaml:"at"`
	Duration string `yaml:"duration"`
	Target   string `yaml:"target"`
	Latency  string `yaml:"latency"`
	Inject   string `yaml:"inject"`
	Heal     string `yaml:"heal"`
	Timeout  string `yaml:"timeout"`
	Effect   string `yaml:"effect"`
	Step     string `yaml:"step"`
}

type rawSkew struct {
	Instance string `yaml:"instance"`
	Offset   string `yaml:"offset"`
}

type rawFaultChecks struct {
	Slack    string `yaml:"slack"`
	Recovery string `yaml:"recovery"`
}

type rawRedis struct {
	Provider     string `yaml:"provider"`
	URL          string `yaml:"url"`
	Proxy        string `yaml:"proxy"`
	Topology     string `yaml:"topology"`
	ReplicaClock string `yaml:"replica_clock"`
}

type rawTarget struct {
	Instances    int       `yaml:"instances"`
	External     []string  `yaml:"external"`
	Peer         string    `yaml:"peer"`
	Spread       string    `yaml:"spread"`
	Store        string    `yaml:"store"`
	FailureMode  string    `yaml:"failure_mode"`
	StoreTimeout string    `yaml:"store_timeout"`
	ClockSkew    []rawSkew `yaml:"clock_skew"`
	// ClockResolution and Clock describe an external target's clock.
	ClockResolution string     `yaml:"clock_resolution"`
	Clock           *rawClock  `yaml:"clock"`
	Routes          []rawRoute `yaml:"routes"`
}

type rawClock struct {
	Offset      string `yaml:"offset"`
	Uncertainty string `yaml:"uncertainty"`
}

type rawRoute struct {
	Path     string            `yaml:"path"`
	Method   string            `yaml:"method"`
	Query    string            `yaml:"query"`
	Headers  map[string]string `yaml:"headers"`
	Body     *string           `yaml:"body"`
	BodyFile string            `yaml:"body_file"`
	Cost     *int64            `yaml:"cost"`
	Policies []limiter.Limit   `yaml:"policies"`
	Limiter  string            `yaml:"limiter"`
}

type rawIdentities struct {
	Count          *int       `yaml:"count"`
	Distribution   string     `yaml:"distribution"`
	Share          *float64   `yaml:"share"`
	S              *float64   `yaml:"s"`
	Carry          string     `yaml:"carry"`
	Header         string     `yaml:"header"`
	Name           string     `yaml:"name"`
	Fixed          *bool      `yaml:"fixed"`
	KeysFile       string     `yaml:"keys_file"`
	IPVersion      *int       `yaml:"ip_version"`
	Prefix         *int       `yaml:"prefix"`
	TrustedHops    *int       `yaml:"trusted_hops"`
	SpoofForwarded bool       `yaml:"spoof_forwarded_for"`
	Groups         []rawGroup `yaml:"groups"`
}

type rawPhase struct {
	Kind            string      `yaml:"kind"`
	Name            string      `yaml:"name"`
	Rate            string      `yaml:"rate"`
	From            string      `yaml:"from"`
	To              string      `yaml:"to"`
	Duration        string      `yaml:"duration"`
	Requests        int         `yaml:"requests"`
	Spread          string      `yaml:"spread"`
	Repeat          *int        `yaml:"repeat"`
	Gap             string      `yaml:"gap"`
	Offset          string      `yaml:"offset"`
	Window          string      `yaml:"window"`
	Routes          []rawWeight `yaml:"routes"`
	HonorRetryAfter bool        `yaml:"honor_retry_after"`
	Groups          []string    `yaml:"groups"`
}

type rawWeight struct {
	Path   string   `yaml:"path"`
	Weight *float64 `yaml:"weight"`
}

type rawChecks struct {
	Budget          *rawBudget      `yaml:"budget"`
	FalseRejections *rawFalse       `yaml:"false_rejections"`
	Headers         *bool           `yaml:"headers"`
	Overhead        *rawOverhead    `yaml:"overhead"`
	MaxLatency      string          `yaml:"max_latency"`
	LoadDelivered   *float64        `yaml:"load_delivered"`
	Faults          *rawFaultChecks `yaml:"faults"`
}

type rawBudget struct {
	MaxExcess int64 `yaml:"max_excess"`
}

type rawFalse struct {
	MaxRate *float64 `yaml:"max_rate"`
}

type rawOverhead struct {
	Route     string   `yaml:"route"`
	Baseline  string   `yaml:"baseline"`
	P50       string   `yaml:"p50"`
	P99       string   `yaml:"p99"`
	P999      string   `yaml:"p999"`
	Versus    string   `yaml:"versus"`
	RatioP50  *float64 `yaml:"ratio_p50"`
	RatioP99  *float64 `yaml:"ratio_p99"`
	RatioP999 *float64 `yaml:"ratio_p999"`
}

// Parse parses and validates one scenario. file names the source in error
// messages and in Scenario.Source; the files a scenario names (body_file,
// keys_file) are read relative to its directory, and a name starting with
// "embedded:" (a shipped scenario) may name none. Header values take
// their ${VAR} references from the environment now. Errors are
// *ScenarioError values.
func Parse(file string, data []byte) (*Scenario, error) {
	return parse(file, data, os.LookupEnv)
}

// parse is Parse with header values' ${VAR} references read through
// lookupEnv.
func parse(file string, data []byte, lookupEnv func(string) (string, bool)) (*Scenario, error) {
	var raw rawScenario
	doc, err := yamlstrict.Decode(file, data, &raw)
	if err != nil {
		return nil, err
	}
	v := &validator{doc: doc, lookupEnv: lookupEnv}
	if !strings.HasPrefix(file, "embedded:") {
		v.dir = filepath.Dir(file)
	}
	s := v.scenario(&raw)
	if v.err != nil {
		return nil, v.err
	}
	s.Source, s.Text = file, data
	return s, nil
}
