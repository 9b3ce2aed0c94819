package testsupport

// TB is what a helper here needs of what runs it, to end it on an error:
// *testing.T and *testing.B have it, and so has a testscript's
// *TestScript, whose commands use the same helpers. The helpers mark
// themselves as helpers where it has Helper too.
type TB interface {
	Fatalf(format string, args ...any)
}
