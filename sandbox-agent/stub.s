// Empty: lets spawn_linux.go declare the runtime fork hooks it links to without bodies.
