module github.com/convergeloop/converge

go 1.26.8

require github.com/vektah/gqlparser/v2 v2.5.64

require github.com/agnivade/levenshtein v1.2.2 // indirect
