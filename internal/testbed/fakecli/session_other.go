//go:build !unix

package fakecli

import "syscall"

func newSession() *syscall.SysProcAttr { return nil }
