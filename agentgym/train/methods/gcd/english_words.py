"""Common English words, in their base forms: the general vocabulary a readable "Common mistakes"
list is written in (:mod:`agentgym.train.methods.gcd.readability` adds inflections and the env's own
words). Grouped by kind only to keep the list easy to read and extend; the last group is the
vocabulary of agents in text environments.
"""

_FUNCTION = """
a an the this that these those there here it its itself they them their theirs themselves what
which who whom whose whoever whatever whichever i me my mine myself we us our ours ourselves you
your yours yourself yourselves he him his himself she her hers herself one ones oneself other
others another each every all any some none no not nor never nothing something anything
everything someone anyone everyone nobody somebody anybody everybody and or but so yet if then
else than because since while whilst when whenever where wherever whether until till unless
although though once before after during about above below across against along alongside among
amongst around at between beyond by down for from in inside into like near of off on onto out
outside over past through throughout to toward towards under underneath up upon with within
without via per instead rather also too very only just even still already again always often
usually sometimes seldom rarely first last next previous later earlier soon now more most less
least many much few fewer several enough own same such both either neither as how why whereas
be am is are was were been being have has had having do does did doing done will would shall
should can could may might must ought need dare don't doesn't didn't isn't aren't wasn't weren't
can't cannot won't wouldn't shouldn't couldn't haven't hasn't hadn't mustn't it's that's
there's here's what's who's let's i'm i've i'll i'd you're you've you'll you'd we're we've we'll
they're they've they'll he's she's yes ok okay please thanks etc
"""

_NUMBERS = """
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred
thousand million billion first second third fourth fifth sixth seventh eighth ninth tenth half
quarter twice thrice double triple single pair couple dozen
"""

_VERBS = """
abandon accept access accomplish account achieve acknowledge acquire act adapt add address adjust
admit adopt advance advise affect afford agree aim allow alter analyze analyse announce answer
anticipate appear apply appreciate approach approve argue arise arrange arrive ask assemble assert
assess assign assist assume assure attach attack attempt attend attract avoid await wake award
back bake balance ban base bear beat become begin behave believe belong bend benefit bet bind bite
blame blend block blow boil book borrow bother bounce bound break breathe bring broadcast browse
build burn burst buy calculate call calm cancel capture care carry cast catch cause cease center
centre challenge change charge chase chat check cheer chew choose chop circle cite claim clarify
classify clean clear click climb cling close collapse collect combine come comment commit
communicate compare compete compile complain complete comply compose comprehend compute conceal
concentrate concern conclude conduct confirm confuse connect consider consist construct consult
consume contact contain continue contribute control convert convince cook cool cooperate
coordinate copy correct cost count cover crash crawl create cross crush cry cure cut damage dance
deal debate decide declare decline decrease define delay delete deliver demand demonstrate deny
depart depend derive describe deserve design desire destroy detect determine develop devote die
differ dig direct disagree disappear discard discover discuss dislike display dispose distinguish
distribute dive divide do double doubt drag drain draw dream dress drink drive drop dry dump earn
ease eat edit educate eliminate embrace emerge emphasize employ empty enable encounter encourage
end endure enforce engage enjoy enlarge enter entertain equip erase escape establish estimate
evaluate examine exceed exchange exclude excuse execute exercise exhibit exist expand expect
experience experiment explain explode explore export expose express extend extract face fail
fall feed feel fetch fight figure file fill filter find finish fire fit fix flash flee flip float
flow fly fold follow forbid force forget forgive form found frame free freeze fry fulfil fulfill
gain gather generate get give glance go grab grant grasp greet grind grip grow guarantee guard
guess guide halt hand handle hang happen harm hate head heal hear heat help hesitate hide hint hit
hold hope host hunt hurry hurt identify ignore illustrate imagine imitate implement imply import
impose improve include incorporate increase indicate infer influence inform inherit insert insist
inspect install instruct intend interact interpret interrupt introduce invent invest investigate
invite involve iron issue join judge jump justify keep kick kill knock know label lack land last
laugh launch lay lead lean learn leave lend let lie lift light like limit link list listen live
load locate lock log look loop lose love lower maintain make manage manipulate map mark marry
master match matter mean measure meet melt memorize mention merge migrate mind miss mistake mix
modify monitor mount move multiply name navigate need neglect negotiate nod note notice notify
obey object observe obtain occupy occur offer omit open operate oppose order organize organise
overcome overlook owe own pack paint park participate pass paste pause pay perceive perform permit
persist persuade pick pile place plan plant play plug point polish pose possess post pour practice
practise pray predict prefer prepare present preserve press presume pretend prevent print proceed
process produce program progress prohibit promise promote prompt pronounce protect prove provide
publish pull pump punch purchase pursue push put qualify query question quit quote race raise
range rank rate reach react read realize realise rearrange reason recall receive recognize
recognise recommend record recover reduce refer refine reflect refuse regard register regret
reject relate relax release rely remain remark remember remind remove render renew rent repair
repeat replace reply report represent request require rescue research reserve reset resist
resolve respect respond rest restart restore restrict result resume retain retrieve retry return
reveal reverse review revise revisit reward ride ring rinse rise risk roll rotate rub ruin rule
run rush sail satisfy save say scan scatter schedule score scratch scroll seal search secure see
seek seem select sell send sense separate serve settle shake shape share shift shine shoot shout
show shut sign signal simplify sing sink sit skip sleep slice slide slip smell smile solve sort
sound speak specify speed spell spend spill split spoil spot spray spread squeeze stack stand
stare start state stay steal steer step stick stir stop store strike strip strive study submit
substitute subtract succeed suffer suggest suit summarize summarise supply support suppose
surprise surround survive suspect swap sweep swim switch take talk taste teach tear tell tend test
thank think throw tie tip toggle tolerate total touch trace track trade train transfer transform
translate transport trap travel treat trigger trim trust try turn twist type undergo understand
undo unlock unpack update upgrade upload urge use utilize vacuum validate value vanish vary verify
view visit wait wake walk wander want warm warn wash waste watch water wave wear weigh welcome
wet win wipe wish withdraw wonder work worry wrap write yield zoom
"""

_IRREGULAR = """
went gone came took taken got gotten gave given saw seen knew known made found thought told left
kept held brought began begun ran wrote written said became felt meant stood understood lost sent
spent built caught chose chosen fell fallen broke broken forgot forgotten hid hidden led laid paid
sold shown spoke spoken threw thrown wore worn won ate eaten drank drunk drove driven flew flown
forgave forgiven froze frozen grew grown hung heard hit hurt knelt lay lain lent lit meant met
mistook mistaken overcame overlooked rode ridden rang rung rose risen sang sung sank sunk sat shook
shaken shone shot shut slept slid sought spent split spread sprang stuck stole stolen stung
struck swept swam swum swung taught tore torn undertook undid undone woke woken wound withdrew
children men women people mice feet teeth geese data criteria phenomena indices matrices analyses
better best worse worst further furthest farther farthest more most less least
"""

_NOUNS = """
ability access account act action activity address advantage advice age agent agreement aim air
alarm alternative amount analysis angle animal answer apple appliance approach area argument arm
arrangement arrival article aspect assignment assistant assumption attempt attention attribute
audience author authority average award background bag balance ball band bank bar base basin
basis basket bath bathroom bathtub battery bed bedroom beginning behavior behaviour belief bell
benefit bin bird birth bit blade blank block blood board boat body bone book boot border bottle
bottom bowl box brain branch bread break breakfast bridge brush bucket budget bug building bulb
bunch business button cabinet cake calculation calculator call camera candle cap capacity capital
car card care carpet case cash cat category cause ceiling cell center centre chain chair chance
change channel chapter character charge chart check cheese chemical chest chicken child choice
circle city claim class client clock cloth clothes cloud clue coat code coffee coin collection
college color colour column combination comment committee company comparison competition
component computer concept concern condition conclusion connection consequence constraint
container content context control conversation cook cookie copy corner cost counter country
county couple course court cover creature credit crew crop cup cupboard curtain customer cycle
damage danger data database date daughter day deal death debt decade decision definition degree
delay delivery demand department description design desk detail device diagram difference
difficulty dinner direction director dirt discussion dish disk display distance doctor document
dog dollar door doubt draft drawer drawing dream dress drink driver drop duration duty ear earth
east economy edge edition education effect effort egg element emergency employee end energy engine
entity entrance entry environment equation equipment error event evidence exam example exception
exchange exercise exit expense experience experiment expert explanation expression extent eye
face fact factor failure family fan farm fashion fault feature fee feedback feeling field figure
file film finding finger fire firm fish flag flame flat flight floor flower fluid focus fold
folder food foot force forest fork form format formula fortune foundation frame freezer friend
front fruit fuel function fund furniture future game gap garage garbage garden gas gate general
generation gift glass goal gold government grade grain graph grass ground group growth guard guess
guest guide gun habit hair half hall hammer hand handle health heart heat height help hill
history hit hold hole home hook hope horse hospital host hotel hour house household idea image
impact importance income increase index industry information ingredient initial input insect
instance instruction instrument interest interface internet interval item jacket jar job joint
journey judge juice key kind king kitchen knife knowledge label lab laboratory lack lake lamp
land language laptop law layer leader leaf lesson letter level library lid life light limit line
link liquid list location lock log loop loss lot machine magazine mail manager manner map mark
market mass master match material matter meal meaning measure meat media medium meeting member
memory message metal method middle milk mind minute mirror mission mistake mixture mode model
moment money month mood morning motion motor mountain mouse mouth move movie mug music name nature
need network news night node noise north note notebook notice number object objective occasion
office oil option order organization origin outcome output oven owner page pain paint pair pan
paper paragraph parameter parent part party passage password path pattern payment peak pen pencil
period permission person phase phone photo phrase picture piece pillow pipe place plan plane
planet plant plastic plate platform player pocket point policy pool population position post pot
potato power practice preference presence president pressure price principle priority problem
procedure process product profile program progress project property proposal protein purpose
quality quantity query question queue radio range rate ratio reaction reader reality reason
receptacle recipe record reference region relation relationship release report request
requirement research resource response responsibility rest result review reward rice ring risk
river road rock role roof room root rope round route row rule safe salt sample sand scale scene
schedule school science score screen search season seat second section sector selection sense
sentence sequence series service session set setting shape share sheet shelf shift ship shirt
shoe shop side sign signal silver sink site situation size skill skin sky slot soap sofa software
soil solution son song sort sound soup source south space speaker speech speed spoon spot stage
stair standard star start state statement station status step stick stock stone stop storage
store story stove strategy stream street strength string structure student study stuff style
subject substance success sugar suggestion sum summary sun supply surface system table tag tail
target task taste tea teacher team technique technology temperature term test text theory thing
thought time tip title today tomorrow tone tool top topic total towel tower town track trade
tradition traffic trail training transfer trash tray tree trend trial trick trip trouble truck
truth try turn type unit university user value variable variety vase vegetable vehicle version
video view village visit voice volume wall water way weather website week weight west wheel while
window wine winter wire wish wood word work worker world writer writing yard year yesterday
"""

_MODIFIERS = """
able absent absolute abstract acceptable accurate active actual additional adequate advanced
afraid alive alone ambiguous ancient angry annual anonymous apparent appropriate approximate
automatic available average aware awake away awful back backward backwards bad basic beautiful
big bitter blank blind blue bold boring brief bright broad brown busy calm capable careful
careless central certain cheap chief clean clear clever close closed cold comfortable common
complete complex concrete confident consistent constant correct costly critical crucial current
cute daily dark dead deep default definite deliberate dense dependent desired detailed different
difficult digital direct dirty distant distinct double dry due dull duplicate eager early easy
effective efficient elsewhere empty entire equal essential eventual everywhere evident exact
excellent excessive exclusive existing expected expensive explicit external extra extreme fair
false familiar famous far fast fat favorite fine final firm flat flexible following foreign
formal former forth forward free frequent fresh friendly front frozen full fun funny general
gentle genuine given glad global golden good grand great green gross guilty happy hard harmful
healthy heavy helpful hidden high historical holy honest hot huge human hungry ideal identical
idle ill illegal immediate important impossible incomplete incorrect independent indirect
individual inner innocent instant intended interesting internal invalid irrelevant key kind large
late latter lazy leading legal light likely limited liquid little live local logical long loose
loud low lucky main major male manual many married massive maximum meaningful meaningless mere
middle mild minimum minor missing mixed modern moist moral multiple mutual narrow nasty natural
near nearby neat necessary negative nervous new nice noisy normal notable obvious odd official old
open opposite optional ordinary original outer overall own pale parallel partial particular past
patient perfect permanent personal physical plain pleasant plenty plus pointless polite poor
popular positive possible potential powerful practical precise present pretty previous primary
prime prior private probable productive professional prompt proper proud public pure purple quick
quiet random rapid rare raw ready real reasonable recent red redundant regular related relative
relevant reliable remote repeated repetitive responsible rich right rough round rude sad safe
same scared secondary secret secure senior sensible separate serious severe shallow sharp short
shy sick significant silent silly similar simple sincere slight slow small smart smooth soft
solid sorry sound special specific stable standard steady sticky stiff straight strange strict
strong stupid subsequent successful sudden sufficient suitable super sure sweet tall temporary
terrible thick thin tight tiny tired top total tough traditional trivial true typical ugly
ultimate unable unavailable unclear uncommon unique universal unknown unlikely unnecessary unusual
upper upset urgent useful useless usual vague valid valuable various vast verbal visible vital
warm weak wealthy weird welcome wet whole wide wild willing wise wonderful worth worthwhile
wrong yellow young
actually almost alone already altogether anyway anywhere apart automatically barely basically
carefully certainly clearly closely completely constantly correctly currently definitely
deliberately directly easily else elsewhere entirely equally especially essentially even
eventually ever exactly explicitly extremely fairly finally firstly frequently fully generally
hardly hence however immediately indeed initially instead largely likely literally mainly merely
meanwhile mostly naturally nearly necessarily neither nevertheless newly nonetheless normally
nowhere obviously otherwise particularly perhaps possibly precisely presumably previously
primarily probably properly quickly quite rapidly rather readily really recently regardless
relatively repeatedly respectively roughly seemingly separately shortly significantly similarly
simply slightly slowly solely somehow somewhat somewhere specifically strictly strongly
successfully suddenly sufficiently supposedly surely therefore thoroughly thus together truly
typically ultimately unfortunately unnecessarily upward usually whatsoever wholly well maybe
"""

_AGENTS = """
agent action command episode turn observation environment env tool query answer search id ids
token reward judge verdict critique inventory receptacle admissible valid invalid format tag json
argument output input prompt reply response task goal instruction mistake loop revisit progress
state step attempt trajectory subgoal plan hint passage document doc entity fact question
bracket brace parenthesis quote comma colon semicolon period dot newline spelling typo markup
"""

FUNCTION_WORDS = frozenset(_FUNCTION.split())
"""Articles, pronouns, prepositions, conjunctions, auxiliaries: the words that carry no content."""

COMMON_WORDS = frozenset(
    w for block in (_FUNCTION, _NUMBERS, _VERBS, _IRREGULAR, _NOUNS, _MODIFIERS, _AGENTS) for w in block.split())
"""About 2,000 base forms; with the inflections and derivations readability takes off, many more."""
