//go:build !linux

package forward

import "syscall"

func childAttr() *syscall.SysProcAttr { return nil }
