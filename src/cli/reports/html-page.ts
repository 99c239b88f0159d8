/**
 * The inline stylesheet and script of `stet export --format html`. The script reads the samples
 * from the page's JSON block and builds the table with `textContent` only (sample text is user
 * data, never markup); it filters by result, status and text, sorts by any column, and shows
 * rows a page at a time so a 10,000-sample report opens fast.
 */

export const REPORT_CSS = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#222}
h1{font-size:1.3rem;margin:0 0 .3rem}
.meta{color:#555;margin:.2rem 0}
table{border-collapse:collapse;margin:.6rem 0}
th,td{border:1px solid #ddd;padding:.25rem .45rem;vertical-align:top;text-align:left}
th{background:#f4f4f4}
table.samples th{cursor:pointer;user-select:none}
table.samples td.text{max-width:22rem;white-space:pre-wrap;word-break:break-word}
tr.fail td{background:#fff4f4}
tr.error td{background:#fff8e6}
.badge{font-size:.8rem;padding:0 .3rem;border-radius:3px;background:#eee}
.filters{display:flex;gap:.5rem;align-items:center;margin:.6rem 0}
.num{text-align:right}
`;

export const REPORT_JS = `
(function(){
var data=JSON.parse(document.getElementById("stet-data").textContent);
var scorers=data.scorers,rows=data.rows,threshold=data.passThreshold,PAGE=200;
var body=document.querySelector("table.samples tbody"),count=document.getElementById("count");
var more=document.getElementById("more"),result=document.getElementById("f-result");
var status=document.getElementById("f-status"),search=document.getElementById("f-search");
var sortCol=0,sortDir=1,shown=PAGE,view=[];
function resultOf(r){if(r[2]==="pending")return"pending";if(r[2]==="error")return"error";
for(var i=0;i<scorers.length;i++){var v=r[6][i];if(typeof v==="number"&&v<threshold)return"fail"}return"pass"}
rows.forEach(function(r){r.result=resultOf(r)});
function hay(r){if(r.hay===undefined)r.hay=(r[0]+"\\n"+r[3]+"\\n"+r[4]+"\\n"+r[5]+"\\n"+r[7]).toLowerCase();return r.hay}
function key(r,c){var S=scorers.length;if(c===2)return r.result;if(c<6)return r[c];if(c<6+S)return r[6][c-6];return c===6+S?r[7]:r[8]}
function cmp(a,b){var x=key(a,sortCol),y=key(b,sortCol),nx=x===null||x===undefined,ny=y===null||y===undefined;
if(nx||ny)return nx===ny?0:nx?1:-1;if(x===y)return 0;return(x<y?-1:1)*sortDir}
function cut(s){return s.length>240?s.slice(0,240)+"…":s}
function cell(tr,text,cls,full){var td=document.createElement("td");td.textContent=full?text:cut(text);if(cls)td.className=cls;tr.appendChild(td);return td}
function draw(){body.textContent="";var frag=document.createDocumentFragment();
view.slice(0,shown).forEach(function(r){var tr=document.createElement("tr");tr.className=r.result;tr.setAttribute("data-sample",r[0]);
cell(tr,r[0]);cell(tr,String(r[1]),"num");cell(tr,r[2]==="scored"?r.result:r[2]);
cell(tr,r[3],"text");cell(tr,r[4],"text");cell(tr,r[5],"text");
scorers.forEach(function(_,i){var v=r[6][i];cell(tr,v===null||v===undefined?"–":String(+v.toFixed(4)),"num")});
cell(tr,r[7],"text");cell(tr,r[8]===null?"":String(r[8]),"num");
tr.addEventListener("click",function(){var full=tr.classList.toggle("full"),tds=tr.children;
[[3,r[3]],[4,r[4]],[5,r[5]],[6+scorers.length,r[7]]].forEach(function(p){tds[p[0]].textContent=full?p[1]:cut(p[1])})});
frag.appendChild(tr)});body.appendChild(frag);
count.textContent=Math.min(shown,view.length)+" of "+view.length+" shown ("+rows.length+" keys)";
more.hidden=shown>=view.length}
function apply(){var res=result.value,st=status.value,q=search.value.toLowerCase();
view=rows.filter(function(r){return(!res||r.result===res)&&(!st||r[2]===st)&&(!q||hay(r).indexOf(q)>=0)});
view.sort(cmp);shown=PAGE;draw()}
document.querySelectorAll("table.samples th").forEach(function(th,i){th.addEventListener("click",function(){
if(sortCol===i)sortDir=-sortDir;else{sortCol=i;sortDir=1}apply()})});
[result,status].forEach(function(e){e.addEventListener("change",apply)});
search.addEventListener("input",apply);more.addEventListener("click",function(){shown+=PAGE*5;draw()});
apply();
})();
`;
