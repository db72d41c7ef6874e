"""Stack programs, one per cloud: compose the components from the validated config."""
