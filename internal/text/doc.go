// Package text is how xrun writes text that it did not choose (an
// experiment's names, its errors, its logs) for people and programs: made
// safe for a terminal (Safe), bounded (HeadTail), cut to one line
// (OneLine), escaped for markdown (Markdown), and the nearest of a list of
// names when one was mistyped (Closest).
package text
