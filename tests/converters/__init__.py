"""Every converter on real and hostile input: detection, the step convention, refusals, worker processes."""
