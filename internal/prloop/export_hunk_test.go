package prloop

// TypoHunk is the diff hunk GitHub gives a comment on the added line
// "// Obsevre the world; Decide is pure." (tests of both packages use it).
const TypoHunk = "@@ -118,6 +118,8 @@ func Run() {\n \tst := opts.Initial\n \tfor {\n+\t\t// Obsevre the world; Decide is pure."
