#!/bin/sh
# Prints a greeting: sh greet.sh NAME
name="${1:-world}"
echo "Hello, $name!"
