package server

import (
	"fmt"
	"runtime/debug"
)

// panicError is a recovered panic, with the stack where it happened.
type panicError struct {
	value any
	stack []byte
}

func newPanicError(v any) panicError { return panicError{value: v, stack: debug.Stack()} }

func (p panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }
