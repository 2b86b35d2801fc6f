#!/usr/bin/env node
// The entry of action.yml: inputs arrive as INPUT_* environment variables.
import '../dist/conclave-action.js';
