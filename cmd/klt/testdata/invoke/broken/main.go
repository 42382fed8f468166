// Command broken does not compile: klt invoke's tests check that a build failure is reported.
package main

func main() { undefinedFunction() }
