//go:build !linux || genl_stub

package genl

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"
)

// TestStubNotSupported checks the package off Linux (or on Linux with
// -tags genl_stub): every way in fails with an error that wraps
// ErrNotSupported and names the operating system, and no exported method
// panics, even on a zero value.
func TestStubNotSupported(t *testing.T) {
	want := fmt.Sprintf("genl: the kernel datapath is Linux only: not supported on %s/%s", runtime.GOOS, runtime.GOARCH)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNotSupported) || err.Error() != want {
			t.Errorf("%s: %v, want %q (wrapping ErrNotSupported)", what, err, want)
		}
	}
	c, err := Dial()
	check("Dial", err)
	if c != nil {
		t.Errorf("Dial returned a Client with its error")
	}
	d, err := Open("br0")
	check("Open", err)
	if d != nil {
		t.Errorf("Open returned a Datapath with its error")
	}
	d, err = Create(DatapathSpec{Name: "br0"})
	check("Create", err)
	if d != nil {
		t.Errorf("Create returned a Datapath with its error")
	}

	// Methods that check their arguments before they reach the client
	// answer with that check's error.
	validates := map[string]bool{"Upcalls": true} // Upcalls(ctx, 0): "0 handlers"
	errType := reflect.TypeFor[error]()
	ctxType := reflect.TypeFor[context.Context]()
	for _, v := range []any{&Client{}, &Datapath{}, &UpcallSocket{}, &VportWatcher{}} {
		rv := reflect.ValueOf(v)
		for i := 0; i < rv.NumMethod(); i++ {
			name := fmt.Sprintf("(%T).%s", v, rv.Type().Method(i).Name)
			m := rv.Method(i)
			mt := m.Type()
			var args []reflect.Value
			for j := 0; j < mt.NumIn(); j++ {
				if mt.IsVariadic() && j == mt.NumIn()-1 {
					break
				}
				if mt.In(j) == ctxType {
					args = append(args, reflect.ValueOf(context.Background()))
				} else {
					args = append(args, reflect.Zero(mt.In(j)))
				}
			}
			var out []reflect.Value
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s panics: %v", name, r)
					}
				}()
				out = m.Call(args)
			}()
			if len(out) == 0 || mt.Out(mt.NumOut()-1) != errType {
				continue
			}
			err, _ := out[len(out)-1].Interface().(error)
			switch {
			case err == nil:
				t.Errorf("%s: no error", name)
			case validates[rv.Type().Method(i).Name]:
				if errors.Is(err, ErrNotSupported) {
					t.Errorf("%s: %v, want its argument check's error", name, err)
				}
			default:
				check(name, err)
			}
		}
	}
}
