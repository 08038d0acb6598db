//! The ARO dependency chain and its gates, as the agent runs them on the simulator.
