"""Reference notes of the RAG corpus: the standards' numbers and the formulas the tools apply.

What lives here: `STANDARDS_NOTES`, a tuple of ``(title, text)`` notes written for this project
(facts from the cited standards and papers, stated in our own words, with the conventions the
`phm_kernels` library uses), which the rag mode indexes next to the data chunks. A retrieval-only
agent that reads the right note and the right data chunk has every number it needs; what it lacks
is the computation. What does not: data (``evidence.py`` renders it from the real files).
"""

from __future__ import annotations

__all__ = ["STANDARDS_NOTES"]

STANDARDS_NOTES: tuple[tuple[str, str], ...] = (
    ("ISO 10816-1 vibration severity zones by machine class",
     "ISO 10816-1 Annex B evaluates broadband vibration velocity RMS (mm/s, 10-1000 Hz) measured "
     "on bearing housings. Zones: A newly commissioned, B acceptable for unrestricted long-term "
     "operation, C unsatisfactory for long-term operation (plan remedial action), D severe "
     "enough to cause damage. Boundaries A/B, B/C, C/D in mm/s RMS: Class I (small machines up "
     "to 15 kW) 0.71, 1.8, 4.5; Class II (medium machines 15-75 kW, or up to 300 kW on special "
     "foundations) 1.12, 2.8, 7.1; Class III (large machines on rigid foundations) 1.8, 4.5, "
     "11.2; Class IV (large machines on soft foundations, e.g. turbo sets) 2.8, 7.1, 18.0. A "
     "value exactly on a boundary belongs to the upper zone. Assess the largest reading."),
    ("ISO 10816-3 vibration zones for industrial machines above 15 kW",
     "ISO 10816-3 covers industrial machines with nominal power above 15 kW and speeds 120-15000 "
     "rpm. Group 1: large machines above 300 kW; group 2: medium machines 15-300 kW. Velocity RMS "
     "zone boundaries A/B, B/C, C/D in mm/s: group 1 rigid foundation 2.3, 4.5, 7.1; group 1 "
     "flexible 3.5, 7.1, 11.0; group 2 rigid 1.4, 2.8, 4.5; group 2 flexible 2.3, 4.5, 7.1. A "
     "value on a boundary belongs to the upper zone."),
    ("Vibration unit conversion for a single tone",
     "For a pure tone: peak = sqrt(2) x RMS, peak-to-peak = 2 sqrt(2) x RMS. Velocity v = 2 pi f "
     "x displacement, acceleration a = 2 pi f x velocity (same amplitude measure on both sides). "
     "1 in/s = 25.4 mm/s, 1 g = 9.80665 m/s^2, 1 mil = 25.4 micrometres. Broadband spectra must "
     "be converted bin by bin."),
    ("Rolling-element bearing defect frequencies",
     "With shaft frequency fr = rpm / 60, n rolling elements, ball diameter d, pitch diameter D "
     "and contact angle phi, let rho = (d / D) cos(phi). FTF (cage) = fr / 2 (1 - rho); BPFO "
     "(outer-race ball pass) = n fr / 2 (1 - rho); BPFI (inner-race ball pass) = n fr / 2 "
     "(1 + rho); BSF (ball spin) = D / (2 d) fr (1 - rho^2); a ball defect strikes a race at "
     "2 x BSF. Drive-end bearing of the CWRU rig, SKF 6205-2RS JEM: n = 9, d = 0.3126 in, D = "
     "1.537 in, phi = 0. Fan-end bearing SKF 6203-2RS JEM: n = 8, d = 0.2656 in, D = 1.122 in."),
    ("Envelope analysis of bearing faults",
     "Envelope analysis band-passes the acceleration around a structural resonance (e.g. "
     "2-4 kHz), takes the amplitude envelope and looks for peaks at BPFO, BPFI or 2 x BSF and "
     "their harmonics in the envelope spectrum. A defect is reported when the harmonic peaks "
     "stand clearly above the local spectral floor; no peak means the bearing is classed as "
     "normal. Ball faults are the hardest to see."),
    ("IEC 61508 safety integrity levels and simplified PFDavg",
     "IEC 61508-1 low-demand mode, average probability of failure on demand PFDavg: SIL 4 from "
     "1e-5 to below 1e-4, SIL 3 from 1e-4 to below 1e-3, SIL 2 from 1e-3 to below 1e-2, SIL 1 "
     "from 1e-2 to below 1e-1; a value on an edge belongs to the worse band. High-demand mode "
     "uses PFH per hour: SIL 4 1e-9 to 1e-8, SIL 3 1e-8 to 1e-7, SIL 2 1e-7 to 1e-6, SIL 1 1e-6 "
     "to 1e-5. A safety function meets a target SIL when its measure is below the upper bound "
     "of that SIL's band. Simplified IEC 61508-6 Annex B formulas without diagnostics or repair, "
     "with dangerous undetected rate lambda_DU (1/h) and proof-test interval T1 (h): 1oo1 "
     "PFDavg = lambda_DU T1 / 2; 1oo2 PFDavg = ((1 - beta) lambda_DU T1)^2 / 3 + beta "
     "lambda_DU T1 / 2 with common-cause factor beta. Risk reduction factor = 1 / PFDavg."),
    ("ISO 13849-1 performance levels",
     "ISO 13849-1 performance level from the average probability of a dangerous failure per "
     "hour PFH_D: PL a 1e-5 to below 1e-4, PL b 3e-6 to below 1e-5, PL c 1e-6 to below 3e-6, "
     "PL d 1e-7 to below 1e-6, PL e 1e-8 to below 1e-7. The achieved PL must be at least the "
     "required PL_r from the risk graph."),
    ("FMEA risk priority number and risk levels",
     "FMEA rates severity S, occurrence O and detection D from 1 to 10; RPN = S x O x D. Risk "
     "levels used here: low RPN 1-49, medium 50-99, high 100-199, critical 200 and above. A "
     "severity of 9 or 10 (safety or regulatory hazard) raises the level to at least high "
     "whatever the RPN. Failure modes are ranked by RPN (highest first), ties by severity."),
    ("OSHA 29 CFR 1910.95 occupational noise dose",
     "Permissible duration at level L dBA: T = 8 / 2^((L - 90) / 5) hours (5 dB exchange rate). "
     "Daily dose D = 100 x sum(C_i / T_i) percent for exposure times C_i, counting levels from "
     "80 dBA (hearing conservation, Appendix A); eight-hour TWA = 16.61 log10(D / 100) + 90 dBA. "
     "The action level (hearing conservation programme) is a dose of 50 % or more (TWA 85 dBA). "
     "The permissible exposure limit counts only levels of 90 dBA and above (Table G-16 starts "
     "there): it is exceeded when that sum of C_i / T_i is above 1 (a PEL dose above 100 %)."),
    ("EU Directive 2002/44/EC vibration exposure A(8)",
     "Daily vibration exposure A(8) = sqrt(sum(a_i^2 T_i) / 8 h) with a_i the frequency-weighted "
     "acceleration (m/s^2) of each task and T_i its duration in hours. Hand-arm: exposure action "
     "value 2.5 m/s^2, exposure limit value 5 m/s^2. Whole body: action value 0.5 m/s^2, limit "
     "value 1.15 m/s^2. A value above the limit must not be reached."),
    ("NEMA MG 1 voltage unbalance of three-phase motors",
     "Percent voltage unbalance = 100 x (maximum deviation of a line voltage from the average of "
     "the three) / average. Above 1 % the motor must be derated (NEMA MG 1 derating curve); "
     "operation above 5 % unbalance is not recommended."),
    ("FAA 14 CFR 91.409 inspections",
     "An aircraft needs an annual inspection within the preceding 12 calendar months. An aircraft "
     "carrying persons for hire or used for flight instruction for hire also needs a 100-hour "
     "inspection every 100 hours of time in service; the 100-hour limit may be exceeded by up to "
     "10 hours only to reach a place where the inspection can be done (the excess counts toward "
     "the next interval)."),
    ("Maintenance economics: preventive cost, failure cost, ROI and payback",
     "Annual preventive cost = f x (c_p + h_d x r) for f actions a year costing c_p each with "
     "h_d downtime hours at r per hour. Expected annual failure cost = p x (repair + h x r + "
     "consequential cost) for annual failure probability p. Programme ROI versus run-to-failure: "
     "savings S = reactive cost - (preventive cost + residual failure cost under the programme); "
     "annuity factor Y_eff = sum over years y = 1..Y of (1 + i)^-y (equals Y when i = 0); ROI = "
     "(S x Y_eff - programme cost) / programme cost; payback = programme cost / S years (never "
     "when S <= 0)."),
    ("Weibull age replacement policy",
     "Replacing an item at age T or at failure, whichever comes first, with Weibull life "
     "R(t) = exp(-(t / eta)^beta) costs g(T) = [c_p R(T) + c_f (1 - R(T))] / integral_0^T R(t) dt "
     "per unit time (Barlow and Proschan). The optimal age T* minimises g; for beta <= 1 "
     "(no wear-out) run-to-failure is optimal with rate c_f / (eta Gamma(1 + 1 / beta)). Savings "
     "fraction = 1 - g(T*) / run-to-failure rate."),
    ("Maintenance timing under an uncertain RUL",
     "With the residual life modelled as Normal(mean RUL, sd) truncated at zero, maintaining at "
     "time t costs g(t) = [c_p (1 - F(t)) + c_f F(t)] / integral_0^t (1 - F(u)) du per unit time; "
     "the cost-optimal time t* minimises g, the RUL threshold is mean - t*, and F(t*) is the "
     "probability of failing before maintenance. A simple safety margin s instead acts at "
     "(1 - s) x mean RUL."),
    ("NASA PCoE Li-ion battery ageing data conventions",
     "Cells B0005, B0006, B0007, B0018 are 2.0 Ah 18650 cells cycled at 24 degC with 2 A "
     "constant-current discharges (cut-off 2.7, 2.5, 2.2 and 2.5 V). End of life (EOL) is the "
     "first discharge cycle with capacity below 1.4 Ah (30 % fade); B0007 never reaches it "
     "(censored). SOH against the first cycle = C_k / C_1; rated SOH = C_k / 2.0 Ah. Stages on "
     "rated SOH: HEALTHY above 0.90, EARLY_DEGRADATION 0.80-0.90, ACCELERATED_DEGRADATION "
     "0.70-0.80, EOL at or below 0.70. Linear fade RUL: fit capacity against cycle on the "
     "observed cycles by least squares and solve for 1.4 Ah; RUL = predicted EOL cycle - last "
     "observed cycle. The empirical model fits C = C0 exp(-k n) with an Arrhenius temperature "
     "factor (Ea = 31.7 kJ/mol)."),
    ("Battery health triage levels",
     "Triage of a cell at a cycle: emergency if the stage is EOL, the predicted RUL is at most "
     "10 cycles or a thermal spike is active; urgent if the stage is ACCELERATED_DEGRADATION or "
     "the RUL is at most 30 cycles; elevated if the stage is EARLY_DEGRADATION or an anomaly "
     "(debounced rolling z-score above 3 on capacity, temperatures, minimum voltage or duration, "
     "window 10, at least 3 consecutive cycles) was flagged; routine otherwise."),
    ("NASA C-MAPSS turbofan data and RUL metrics",
     "C-MAPSS (Saxena et al. 2008) simulates turbofan fleets run to failure: FD001 (1 operating "
     "condition, HPC fault), FD002 (6 conditions, HPC), FD003 (1 condition, HPC and fan faults), "
     "FD004 (6 conditions, HPC and fan). Each row: unit, cycle, three operational settings, 21 "
     "sensors s1-s21. Test units stop before failure; the true RUL after the last test cycle is "
     "kept in a separate file. Metrics on d = predicted - true RUL: MAE = mean |d|, RMSE = "
     "sqrt(mean d^2), PHM08 score = sum(exp(-d / 13) - 1) for early (d < 0) and "
     "sum(exp(d / 10) - 1) for late predictions. Published deep models reach RMSE of about "
     "12-16 cycles on FD001."),
    ("Turbofan module health from efficiency and flow deviations",
     "For a module (FAN, LPC, HPC, HPT, LPT) with fractional efficiency deviation e and flow "
     "deviation f, the severity m = max(|e|, |f|): HEALTHY m < 0.01 (operating normally), "
     "DEGRADED 0.01-0.03 and SEVERE 0.03-0.05 (abnormal degradation), CRITICAL 0.05 or more "
     "(imminent failure). Signature: ratio |f| / |e|; NONE if both below 0.005, "
     "EFFICIENCY_DOMINANT below 0.5, FLOW_DOMINANT above 2, COUPLED otherwise."),
    ("Trend tests for degradation",
     "The Mann-Kendall test counts S = sum over pairs sign(y_j - y_i); with its tie-corrected "
     "variance the continuity-corrected z gives a two-sided p-value; a significant S > 0 is an "
     "increasing trend, S < 0 decreasing. Sen's slope is the median of pairwise slopes. The time "
     "to a threshold is found by fitting linear (y = b0 + b1 t) and exponential (ln y = a0 + a1 "
     "t) trends, choosing the lower AIC, and solving the chosen curve for the threshold after "
     "the last observation."),
)
