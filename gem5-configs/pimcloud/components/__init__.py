"""gem5 components (board, processors, cache hierarchies, memory) in gem5 stdlib style."""
