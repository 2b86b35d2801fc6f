#!/usr/bin/env node
import '../dist/conclave.js';
