"""AgentLoom: a durable agent runtime."""
