module sandgym/sandbox-agent

go 1.19
