package policy

import "testing"

func BenchmarkDecideBash(b *testing.B) {
	p, _ := Compile(Spec{Allow: []string{"Bash(go test *)", "Bash(git:*)"}, Deny: []string{"Bash(rm -rf *)", "Bash(git push*)"}})
	c := bashCall("go test ./... && git status | head -5; echo $(date) 2>&1")
	for i := 0; i < b.N; i++ {
		p.Decide(c)
	}
}
