package main

import (
	"slices"
	"strconv"
	"strings"
)

func setOf(ids []float64) string {
	var s []string
	slices.Sort(ids)
	for _, id := range ids {
		s = append(s, strconv.FormatFloat(id, 'f', -1, 64))
	}
	return strings.Join(s, " ")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// emf reports whether some line is an Embedded Metric Format document.
func emf(lines []map[string]any) bool {
	for _, l := range lines {
		if _, ok := l["_aws"]; ok {
			return true
		}
	}
	return false
}
