package spec

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The canonical JSON of Fields' values, written without encoding/json for
// the values a spec holds (strings, lists of strings, integers, booleans,
// durations and sizes), since a plan of a large file hashes every plugin,
// and with encoding/json for anything else. Every value comes out byte for
// byte as json.Marshal writes it (hash_test.go compares the two): saved
// plans and running state hold digests of these bytes.

// shape is how flatten treats a field.
type shape uint8

const (
	shapeValue     shape = iota // one JSON value
	shapeStructPtr              // a pointer to a struct: its fields, and "{}" for itself
	shapeStruct                 // a struct without MarshalText or MarshalJSON: its fields, dotted
	shapeMap                    // one JSON value per key
)

// fieldInfo is one field of a struct that flatten writes.
type fieldInfo struct {
	index []int  // for reflect.Value.FieldByIndex
	name  string // the yaml name
	shape shape
}

// fieldInfos caches fieldsOf by type: reading struct tags through
// reflection for every plugin of a large file is costly.
var fieldInfos sync.Map // reflect.Type → []fieldInfo

// fieldsOf lists the fields of struct type t that have a yaml name, those
// of a struct embedded inline under their own names (yamlFieldList).
func fieldsOf(t reflect.Type) []fieldInfo {
	if fs, ok := fieldInfos.Load(t); ok {
		return fs.([]fieldInfo)
	}
	var fs []fieldInfo
	for _, yf := range yamlFieldList(t) {
		f := t.FieldByIndex(yf.index)
		fi := fieldInfo{index: yf.index, name: yf.name}
		switch {
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
			fi.shape = shapeStructPtr
		case f.Type.Kind() == reflect.Struct && !f.Type.Implements(textMarshaler) && !f.Type.Implements(jsonMarshaler):
			fi.shape = shapeStruct
		case f.Type.Kind() == reflect.Map:
			fi.shape = shapeMap
		}
		fs = append(fs, fi)
	}
	fieldInfos.Store(t, fs)
	return fs
}

var (
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
)

// form is how jsonValue writes a type's values.
type form uint8

const (
	formJSON    form = iota // through encoding/json
	formText                // the JSON string of its MarshalText
	formString              // a JSON string
	formBool                // true or false
	formInt                 // a JSON integer
	formStrings             // a JSON array of strings, when not nil
)

// forms caches formOf by type.
var forms sync.Map // reflect.Type → form

// formOf returns how jsonValue writes values of t: by hand where
// encoding/json would write them as a plain string, boolean, integer or
// list of strings, else through encoding/json.
func formOf(t reflect.Type) form {
	if e, ok := forms.Load(t); ok {
		return e.(form)
	}
	plain := func(t reflect.Type) bool {
		return !t.Implements(jsonMarshaler) && !reflect.PointerTo(t).Implements(jsonMarshaler) &&
			!t.Implements(textMarshaler) && !reflect.PointerTo(t).Implements(textMarshaler)
	}
	e := formJSON
	switch {
	case t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler):
	case t.Implements(textMarshaler):
		e = formText
	case !plain(t):
	case t.Kind() == reflect.String:
		e = formString
	case t.Kind() == reflect.Bool:
		e = formBool
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		e = formInt
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String && plain(t.Elem()):
		e = formStrings
	}
	forms.Store(t, e)
	return e
}

// jsonValue is canonicalJSON of v's value.
func jsonValue(v reflect.Value) string {
	switch formOf(v.Type()) {
	case formText:
		if text, err := v.Interface().(encoding.TextMarshaler).MarshalText(); err == nil {
			return jsonString(string(text))
		}
	case formString:
		return jsonString(v.String())
	case formBool:
		return strconv.FormatBool(v.Bool())
	case formInt:
		return strconv.FormatInt(v.Int(), 10)
	case formStrings:
		if !v.IsNil() {
			return jsonStrings(v)
		}
	}
	return canonicalJSON(v.Interface())
}

// jsonStrings is the JSON array of a non-nil slice of strings.
func jsonStrings(v reflect.Value) string {
	ss := make([]string, v.Len())
	for i := range ss {
		ss[i] = v.Index(i).String()
	}
	return jsonList(ss)
}

// jsonSorted is the JSON array of ss, sorted.
func jsonSorted(ss []string) string {
	ss = slices.Clone(ss)
	slices.Sort(ss)
	return jsonList(ss)
}

// jsonList is the JSON array of ss, which is not nil.
func jsonList(ss []string) string {
	var b strings.Builder
	n := 2 + len(ss)
	for _, s := range ss {
		n += len(s) + 2 // its quotes, and escapes for none, as in most
	}
	b.Grow(n)
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(s))
	}
	b.WriteByte(']')
	return b.String()
}

// jsonString is s as encoding/json writes it. A string of printable ASCII
// that needs no escape, as nearly all of a spec's are, is s in quotes;
// encoding/json writes any other.
func jsonString(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return canonicalJSON(s)
		}
	}
	return `"` + s + `"`
}

func canonicalJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("spec: marshal %T: %v", v, err)) // only plain data reaches here
	}
	return string(b)
}

// digestFields is the digest of a flat set of fields: each key, a NUL, its
// value and a newline, in the order of the keys.
func digestFields(fields map[string]string) string {
	keys := make([]string, 0, len(fields))
	n := 0
	for k, v := range fields {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	for _, k := range keys {
		b = append(b, k...)
		b = append(b, 0)
		b = append(b, fields[k]...)
		b = append(b, '\n')
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// parallel calls f(i) for each i below n, on as many goroutines as Go
// runs at once, and returns when all have returned.
func parallel(n int, f func(i int)) {
	parallelRange(min(parallelism(), n/64+1), n, func(_, i int) { f(i) }) // small jobs stay on one
}

// parallelism is how many goroutines run at once.
func parallelism() int { return runtime.GOMAXPROCS(0) }

// parallelRange calls f(w, i) for each i below n on workers goroutines,
// w being the goroutine's number, and returns when all have returned.
func parallelRange(workers, n int, f func(w, i int)) {
	if workers <= 1 {
		for i := range n {
			f(0, i)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				f(w, i)
			}
		})
	}
	wg.Wait()
}
