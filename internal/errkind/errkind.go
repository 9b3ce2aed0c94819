// Package errkind is the one registry of the kinds of errors that cross
// graft's APIs: the host's, the runner's, and the causes of a stop
// (docs/stopping.md, "Errors across the API"). Each kind is declared
// once, by the package that owns it, with the HTTP status of an answer
// of that kind and, for a Go error type, the type. The side that sends an
// error names its kind and sends its fields; the side that receives it
// gives it its type back, so that errors.As finds it there too.
package errkind

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sync"
)

// Kind is one kind of error on the wire.
type Kind struct {
	// Name is how the wire names it ("no-session", "cleanup").
	Name string
	// Status is the HTTP status of an answer of this kind.
	Status int

	typ    reflect.Type // the error's dynamic type, for a typed kind
	detail bool         // whether its fields travel as its detail
	value  error        // the error itself, for a sentinel
}

// The kinds of HTTP itself, which both daemons answer with (their guard
// and their handlers alike).
const (
	BadRequest   = "bad-request"            // 400: a request that cannot be read or done as it is
	Unauthorized = "unauthorized"           // 401: a bad or missing token
	Forbidden    = "forbidden"              // 403: a request from a web browser
	Timeout      = "timeout"                // 408: a body that did not come in time
	TooLarge     = "too-large"              // 413: a body over the limit
	MediaType    = "unsupported-media-type" // 415: a body, or a POST, that is not application/json
	Internal     = "internal"               // 500: the daemon's own failure
	TooMany      = "too-many"               // 429: a listener serves as many streams as it may
	Unavailable  = "unavailable"            // 503: a listener serves as many connections as it may
	Newer        = "newer-protocol"         // 400: a request of a later protocol than the daemon's API
)

var (
	mu     sync.RWMutex
	byName = map[string]*Kind{}
	byType = map[reflect.Type]*Kind{}
	byErr  = map[error]*Kind{}
)

func init() {
	for name, status := range map[string]int{
		BadRequest: http.StatusBadRequest, Unauthorized: http.StatusUnauthorized, Forbidden: http.StatusForbidden,
		Timeout: http.StatusRequestTimeout, TooLarge: http.StatusRequestEntityTooLarge,
		MediaType: http.StatusUnsupportedMediaType, Internal: http.StatusInternalServerError,
		TooMany: http.StatusTooManyRequests, Unavailable: http.StatusServiceUnavailable,
		Newer: http.StatusBadRequest,
	} {
		Define(name, status)
	}
}

// Define declares a kind known by its name alone: the answer carries no
// Go type (the runner's "no-session"). It panics if the name is taken.
func Define(name string, status int) *Kind { return add(&Kind{Name: name, Status: status}) }

// Type declares the kind of the errors of sample's dynamic type (a
// pointer such as (*CleanupError)(nil), or a value type such as
// spec.Errors); with detail, their fields travel as JSON, and the far
// side fills a new value from them. It panics if the name or the type is
// taken.
func Type(name string, status int, sample error, detail bool) *Kind {
	return add(&Kind{Name: name, Status: status, typ: reflect.TypeOf(sample), detail: detail})
}

// Sentinel declares the kind of one error value (apply.ErrCancelled),
// which the far side gets back as itself.
func Sentinel(name string, status int, err error) *Kind {
	return add(&Kind{Name: name, Status: status, value: err})
}

func add(k *Kind) *Kind {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := byName[k.Name]; dup {
		panic(fmt.Sprintf("errkind: kind %q declared twice", k.Name))
	}
	byName[k.Name] = k
	switch {
	case k.typ != nil:
		if _, dup := byType[k.typ]; dup {
			panic(fmt.Sprintf("errkind: type %s declared twice", k.typ))
		}
		byType[k.typ] = k
	case k.value != nil:
		byErr[k.value] = k
	}
	return k
}

// Lookup is the kind named name; nil when none is declared here (a kind
// of another version of graft, or of a package this program does not
// link).
func Lookup(name string) *Kind {
	mu.RLock()
	defer mu.RUnlock()
	return byName[name]
}

// StatusOf is the HTTP status of an answer of kind name, or def when no
// kind of that name is declared.
func StatusOf(name string, def int) int {
	if k := Lookup(name); k != nil {
		return k.Status
	}
	return def
}

// Exact is the kind of err itself, by its type or as a sentinel; nil
// when it has none.
func Exact(err error) *Kind {
	if err == nil {
		return nil
	}
	mu.RLock()
	defer mu.RUnlock()
	if k := byType[reflect.TypeOf(err)]; k != nil {
		return k
	}
	if reflect.TypeOf(err).Comparable() {
		return byErr[err]
	}
	return nil
}

// Of is the outermost error of err's chain that has a kind, looking as
// errors.As does (depth first, through Unwrap() error and Unwrap()
// []error), and its kind; nil and nil when none has.
func Of(err error) (*Kind, error) {
	for err != nil {
		if k := Exact(err); k != nil {
			return k, err
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if k, found := Of(e); k != nil {
					return k, found
				}
			}
			return nil, nil
		default:
			return nil, nil
		}
	}
	return nil, nil
}

// Detail is the JSON of err's fields, when its kind k carries them;
// nil otherwise.
func (k *Kind) Detail(err error) (json.RawMessage, error) {
	if !k.detail {
		return nil, nil
	}
	return json.Marshal(err)
}

// New gives an error of kind k back: its sentinel, or a new value of its
// type filled from detail. It is nil when k cannot: a kind known by name
// alone, a value type without detail, or a detail that does not decode
// (a graft of another version).
func (k *Kind) New(detail json.RawMessage) error {
	switch {
	case k.value != nil:
		return k.value
	case k.typ == nil:
		return nil
	case k.typ.Kind() != reflect.Pointer:
		if !k.detail || len(detail) == 0 {
			return nil
		}
		v := reflect.New(k.typ)
		if json.Unmarshal(detail, v.Interface()) != nil {
			return nil
		}
		return v.Elem().Interface().(error)
	}
	v := reflect.New(k.typ.Elem())
	if k.detail {
		if len(detail) == 0 || json.Unmarshal(detail, v.Interface()) != nil {
			return nil
		}
	}
	return v.Interface().(error)
}

// List is the errors err aggregates (go-multierror's, errors.Join's), or
// err itself; nil for nil: the failures of an apply, the causes of a stop.
func List(err error) []error {
	switch m := err.(type) {
	case nil:
		return nil
	case interface{ WrappedErrors() []error }:
		return m.WrappedErrors()
	case interface{ Unwrap() []error }:
		return m.Unwrap()
	}
	return []error{err}
}
