//! The theorems as code: phi, schedules, explicit bounds (see issue "theory").
