// Package starpo is ragen's StarPO trainer (placeholder doc, expanded below).
package starpo
