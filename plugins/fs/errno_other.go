//go:build !wasip1

package main

func notCapable(error) bool { return false }
