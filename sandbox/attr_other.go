//go:build !linux

package sandbox

import "syscall"

func childAttr() *syscall.SysProcAttr { return nil }
