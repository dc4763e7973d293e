package main

func (c *cli) inspect(args []string) int {
	return c.usageError("inspect needs the wasm sandbox, which this build does not have yet")
}
