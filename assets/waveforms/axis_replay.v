// A testbench that replays Ethernet frames over a 64-bit AXI4-Stream
// (tdata, tkeep, tvalid, tlast in scope tb.u, clocked by tb.clk at 250 MHz)
// and dumps them: the waveform rocescope's tests decode, and the README's
// sim_dump.vcd. The frames come from a hex file (+frames=FILE), one word a
// beat (below; rocescope's tests write them, app/src/test_wave.rs); the
// dump goes to +dump=FILE (default wave.vcd; `vvp -fst` writes FST).
//
//   iverilog -o axis_replay.vvp assets/waveforms/axis_replay.v
//   vvp -n axis_replay.vvp +frames=assets/waveforms/sample-write-read.hex +dump=sim_dump.vcd
`timescale 1ns/1ps
module rx(input aclk);
  reg [63:0] tdata = 0; reg [7:0] tkeep = 0; reg tvalid = 0; reg tlast = 0;
  // Each frame's BTH opcode, PSN and AETH syndrome from its first beat, as a
  // design's debug registers would hold them (the signals view shows them).
  reg [7:0] bth_opcode = 0; reg [23:0] bth_psn = 0; reg [7:0] aeth_syndrome = 0;
endmodule
module tb;
  reg clk = 0; always #2 clk = ~clk;
  rx u(.aclk(clk));
  // A beat, one 35-digit hex word a line ("//" lines are comments):
  // {4'h1, idle cycles before the beat[15:0], first[3:0], last[3:0],
  //  tkeep[7:0], tdata[63:0] (byte 0 in [7:0]), opcode[7:0], psn[23:0],
  //  syndrome[7:0]}
  reg [139:0] beat;
  reg [8*256-1:0] frames;
  reg [8*256-1:0] dump;
  reg [8*256-1:0] line;
  integer fd;
  initial begin
    if (!$value$plusargs("frames=%s", frames)) begin
      $display("usage: vvp -n axis_replay.vvp +frames=FILE.hex [+dump=FILE.vcd]");
      $finish;
    end
    fd = $fopen(frames, "r");
    if (fd == 0) begin
      $display("axis_replay: cannot open %0s", frames);
      $finish;
    end
    if (!$value$plusargs("dump=%s", dump)) dump = "wave.vcd";
    $dumpfile(dump); $dumpvars(0, tb.clk, tb.u);
    while ($fgets(line, fd) > 0) begin
      if ($sscanf(line, "%h", beat) == 1 && beat[139:136] == 4'h1) begin
        if (beat[135:120] != 0) begin
          u.tvalid <= 0; u.tlast <= 0;
          repeat (beat[135:120]) @(posedge clk);
        end
        u.tdata <= beat[103:40]; u.tkeep <= beat[111:104];
        u.tvalid <= 1; u.tlast <= beat[112];
        if (beat[116]) begin
          u.bth_opcode <= beat[39:32]; u.bth_psn <= beat[31:8];
          u.aeth_syndrome <= beat[7:0];
        end
        @(posedge clk);
      end
    end
    $fclose(fd);
    u.tvalid <= 0; u.tlast <= 0; repeat (4) @(posedge clk);
    #3 $finish;
  end
endmodule
