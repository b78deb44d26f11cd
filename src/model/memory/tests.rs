//! Tests of the planner on made-up descriptions (llama.cpp's figures are in tests/memory.rs).
